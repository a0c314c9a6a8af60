//! The root manifest's `[execution]` table and a capability's `local` and `platform`: where an
//! action may run when remote execution is on.

use std::collections::BTreeMap;

use once_graph::ExecutionSettings;

use crate::util::TempWs;

#[test]
fn the_table_and_a_capabilitys_placement_are_read_as_written() {
    let tmp = TempWs::new(&[(
        "once.toml",
        "[execution]\nremote = \"grpc://127.0.0.1:50051\"\ninstance = \"main\"\njobs = 128\n\
         platform = { OSFamily = \"linux\", container-image = \"docker://build:1\" }\n\
         [targets.web]\nkind = \"command\"\n\
         [targets.web.capabilities.e2e]\ncommand = \"true\"\nlocal = true\n\
         [targets.web.capabilities.build]\ncommand = \"true\"\nplatform = { container-image = \"docker://node:22\" }\n",
    )]);
    let ws = tmp.load();
    assert!(ws.diagnostics().is_empty(), "{:?}", ws.diagnostics());
    assert_eq!(
        ws.execution_settings(),
        &ExecutionSettings {
            remote: Some("grpc://127.0.0.1:50051".into()),
            instance: Some("main".into()),
            jobs: Some(128),
            platform: BTreeMap::from([
                ("OSFamily".into(), "linux".into()),
                ("container-image".into(), "docker://build:1".into()),
            ]),
        }
    );
    let web = ws.target("web").unwrap();
    let e2e = web.capabilities.iter().find(|c| &*c.name == "e2e").unwrap();
    assert!(e2e.placement.local);
    let build = web
        .capabilities
        .iter()
        .find(|c| &*c.name == "build")
        .unwrap();
    assert!(!build.placement.local);
    assert_eq!(
        build
            .placement
            .platform
            .get("container-image")
            .map(String::as_str),
        Some("docker://node:22")
    );
}

#[test]
fn what_cannot_be_used_is_a_diagnostic_naming_the_key() {
    for (manifest, code, text) in [
        (
            "[execution]\nremote = \"http://x:1\"\n",
            "bad-remote-url",
            "`execution.remote` must be a gRPC URL",
        ),
        (
            "[execution]\njobs = 0\n",
            "bad-jobs",
            "invalid `execution.jobs`",
        ),
        (
            "[execution]\njobs = \"many\"\n",
            "bad-jobs",
            "invalid `execution.jobs`",
        ),
        (
            "[execution]\ntoken = \"s3cret\"\n",
            "credentials-in-manifest",
            "`execution.token` would put credentials",
        ),
        (
            "[execution]\nremtoe = \"grpc://x:1\"\n",
            "unknown-key",
            "unknown key `remtoe` in `[execution]`",
        ),
        (
            "[execution]\nplatform = { OSFamily = 3 }\n",
            "wrong-type",
            "platform property `OSFamily`",
        ),
    ] {
        let tmp = TempWs::new(&[("once.toml", manifest)]);
        let ws = tmp.load();
        let found = ws
            .diagnostics()
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("{manifest}: no {code} in {:?}", ws.diagnostics()));
        assert!(
            found.message.contains(text),
            "{manifest}: {}",
            found.message
        );
        // A credential's value is never shown.
        assert!(!format!("{:?}", ws.diagnostics()).contains("s3cret"));
    }
    let tmp = TempWs::new(&[
        ("once.toml", "[workspace]\nmembers = [\"m\"]\n"),
        ("m/once.toml", "[execution]\nremote = \"grpc://x:1\"\n"),
    ]);
    let ws = tmp.load();
    assert!(
        ws.diagnostics()
            .iter()
            .any(|d| d.code == "execution-in-member"),
        "{:?}",
        ws.diagnostics()
    );
}
