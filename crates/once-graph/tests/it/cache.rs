//! The root manifest's `[cache]` table: what a remote cache is configured with, and the
//! credentials it refuses to hold.

use std::time::Duration;

use once_graph::CacheSettings;

use crate::util::TempWs;

#[test]
fn every_key_is_read_as_written() {
    let tmp = TempWs::new(&[(
        "once.toml",
        "[cache]\nremote = \"grpcs://cache.example.com\"\ninstance = \"main\"\nupload = false\ntimeout = \"1m30s\"\nmax-blob = \"512MiB\"\nmax-result = \"2GiB\"\n",
    )]);
    let ws = tmp.load();
    assert!(ws.diagnostics().is_empty(), "{:?}", ws.diagnostics());
    assert_eq!(
        ws.cache_settings(),
        &CacheSettings {
            remote: Some("grpcs://cache.example.com".to_string()),
            instance: Some("main".to_string()),
            upload: Some(false),
            timeout: Some(Duration::from_secs(90)),
            max_blob: Some(512 << 20),
            max_result: Some(2 << 30),
            max_size: None,
            share_worktrees: None,
        }
    );

    // Plaintext with a port and an empty instance name, which REAPI servers accept.
    tmp.write(
        "once.toml",
        "[cache]\nremote = \"grpc://127.0.0.1:50051\"\ninstance = \"\"\nupload = true\n",
    );
    let ws = tmp.load();
    assert!(ws.diagnostics().is_empty(), "{:?}", ws.diagnostics());
    assert_eq!(
        ws.cache_settings(),
        &CacheSettings {
            remote: Some("grpc://127.0.0.1:50051".to_string()),
            instance: Some(String::new()),
            upload: Some(true),
            timeout: None,
            max_blob: None,
            max_result: None,
            max_size: None,
            share_worktrees: None,
        }
    );
}

#[test]
fn absent_keys_stay_unset() {
    // Unset, not defaulted: the caller layers flags and environment over these.
    for manifest in ["", "[cache]\n", "[workspace]\nname = \"x\"\n"] {
        let tmp = TempWs::new(&[("once.toml", manifest)]);
        let ws = tmp.load();
        assert!(ws.diagnostics().is_empty(), "{manifest:?}");
        assert_eq!(
            ws.cache_settings(),
            &CacheSettings::default(),
            "{manifest:?}"
        );
    }
    assert_eq!(
        CacheSettings::default(),
        CacheSettings {
            remote: None,
            instance: None,
            upload: None,
            timeout: None,
            max_blob: None,
            max_result: None,
            max_size: None,
            share_worktrees: None,
        }
    );
}

#[test]
fn a_bad_size_names_the_key_and_what_is_expected() {
    for bad in ["0", "1GB", "lots"] {
        let tmp = TempWs::new(&[("once.toml", &*format!("[cache]\nmax-blob = \"{bad}\"\n"))]);
        let ws = tmp.load();
        let codes: Vec<&str> = ws.diagnostics().iter().map(|d| d.code).collect();
        assert_eq!(codes, ["bad-size"], "{bad}");
        let text = ws.diagnostics()[0].to_string();
        assert!(text.contains("invalid `cache.max-blob`"), "{text}");
        assert_eq!(ws.cache_settings().max_blob, None);
    }
}

#[test]
fn a_bad_value_leaves_its_key_unset_and_the_others_read() {
    let tmp = TempWs::new(&[(
        "once.toml",
        "[cache]\nremote = \"http://cache:8080\"\ninstance = \"ci\"\ntimeout = \"soon\"\n",
    )]);
    let ws = tmp.load();
    assert!(ws.has_errors());
    let codes: Vec<&str> = ws.diagnostics().iter().map(|d| d.code).collect();
    assert_eq!(codes, ["bad-remote-url", "bad-duration"]);
    let url = ws.diagnostics()[0].to_string();
    assert!(url.contains("`http://cache:8080`"), "{url}");
    assert_eq!(
        ws.cache_settings(),
        &CacheSettings {
            instance: Some("ci".to_string()),
            ..CacheSettings::default()
        }
    );
}

#[test]
fn credentials_are_refused_without_echoing_them() {
    let secret = "Bearer s3cret-0123456789";
    for (key, value) in [
        ("headers", format!("{{ Authorization = \"{secret}\" }}")),
        ("headers", format!("[\"Authorization: {secret}\"]")),
        ("header", format!("\"Authorization: {secret}\"")),
        ("authorization", format!("\"{secret}\"")),
        ("token", format!("\"{secret}\"")),
    ] {
        let manifest = format!("[cache]\nremote = \"grpc://127.0.0.1:1\"\n{key} = {value}\n");
        let tmp = TempWs::new(&[("once.toml", &manifest)]);
        let ws = tmp.load();
        let diags = ws.diagnostics();
        assert_eq!(diags.len(), 1, "{key}: {diags:?}");
        let d = &diags[0];
        assert_eq!(
            (d.code, d.line, d.column),
            ("credentials-in-manifest", 3, 1),
            "{key}"
        );
        let text = d.to_string();
        let json = serde_json::to_string(d).unwrap();
        for shown in [&text, &json] {
            assert!(!shown.contains("s3cret"), "{key} echoed its value: {shown}");
        }
        assert!(text.contains(&format!("`cache.{key}`")), "{text}");
        assert!(text.contains("committed"), "{text}");
        assert!(text.contains("ONCE_REMOTE_HEADERS"), "{text}");
        assert!(text.contains("`Name: value`"), "{text}");
        assert!(text.contains("ONCE_REMOTE_HEADERS_FILE"), "{text}");
        assert!(text.contains("--remote-headers-file"), "{text}");
        // The rest of the table still counts.
        assert_eq!(
            ws.cache_settings().remote.as_deref(),
            Some("grpc://127.0.0.1:1")
        );
    }
}

#[test]
fn a_member_cannot_configure_the_cache() {
    let tmp = TempWs::new(&[
        ("once.toml", "[workspace]\nmembers = [\"m\"]\n"),
        ("m/once.toml", "[cache]\nupload = true\n"),
    ]);
    let ws = tmp.load();
    let codes: Vec<&str> = ws.diagnostics().iter().map(|d| d.code).collect();
    assert_eq!(codes, ["cache-in-member"]);
    assert_eq!(ws.cache_settings(), &CacheSettings::default());
}
