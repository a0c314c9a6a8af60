//! Reserved names on a file system that folds case: a FAT image mounted with `fusefat` (the
//! kernel here has no case-folding ext4, and FAT folds every folder), against a folder of the
//! usual case-sensitive temporary file system. `.GIT/config` is git's config on the first and an
//! ordinary file on the second, and `once-fs` must tell them apart per folder.
//!
//! Needs `mkfs.vfat` (Debian's dosfstools) and `fusefat`, which `scripts/install-test-deps`
//! installs, and `/dev/fuse`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use once_fs::{PathError, Root, WorkspacePath};

/// A FAT image mounted at `mount`, unmounted when dropped.
struct Fat {
    dir: PathBuf,
    mount: PathBuf,
}

impl Fat {
    fn mount(name: &str) -> Fat {
        let dir = std::env::temp_dir().join(format!("once-fs-fat-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let image = dir.join("fat.img");
        let mount = dir.join("mnt");
        std::fs::create_dir(&mount).expect("mkdir");
        std::fs::File::create(&image)
            .and_then(|file| file.set_len(16 << 20))
            .expect("makes the image");
        run(Command::new("mkfs.vfat").arg(&image));
        run(Command::new("fusefat")
            .args(["-o", "rw+"])
            .arg(&image)
            .arg(&mount));
        let fat = Fat { dir, mount };
        // fusefat answers once its mount is in place; wait for it, bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !mounted(&fat.mount) {
            assert!(
                Instant::now() < deadline,
                "fusefat did not mount {}",
                fat.mount.display()
            );
            std::thread::yield_now();
        }
        fat
    }
}

impl Drop for Fat {
    fn drop(&mut self) {
        let _ = Command::new("fusermount")
            .arg("-u")
            .arg(&self.mount)
            .status()
            .or_else(|_| Command::new("umount").arg(&self.mount).status());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|mounts| {
        mounts
            .lines()
            .any(|line| line.split(' ').nth(1) == path.to_str())
    })
}

fn run(command: &mut Command) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run {command:?} ({error}): install dosfstools and fusefat with \
                 `scripts/install-test-deps`"
            )
        });
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn path(text: &str) -> WorkspacePath {
    WorkspacePath::parse(text).expect("a workspace path")
}

fn is_reserved(result: Result<impl Sized, PathError>) -> bool {
    matches!(result, Err(PathError::Reserved { .. }))
}

/// Writes through `root` as a change set or an example would.
fn writes(root: &Root, text: &str) -> bool {
    let target = path(text);
    match root.make_parent_of(&target) {
        Ok((folder, _)) => folder.write_synced(target.name(), b"x").is_ok(),
        Err(_) => false,
    }
}

#[test]
fn on_a_folding_file_system_every_spelling_of_git_and_once_is_refused() {
    let fat = Fat::mount("refused");
    let workspace = fat.mount.join("ws");
    std::fs::create_dir_all(workspace.join(".git/hooks")).expect("git's folder");
    let root = Root::open(&workspace).expect("opens the root");

    for spelling in [".GIT/config", ".Git/hooks/x", ".gIT/HEAD", ".ONCE/state"] {
        assert!(
            is_reserved(root.make_parent_of(&path(spelling))),
            "`{spelling}` reaches a reserved folder here"
        );
        assert!(!writes(&root, spelling), "`{spelling}` was written");
    }
    // The last component too: a file named `.GIT` beside nothing, made through a folder.
    let top = root.top().expect("the top");
    assert!(
        top.create(".Git", 0o644).is_err(),
        "`.Git` was made at the top"
    );
    // Where git's folder does not exist yet, making `.GIT` would make it: refused as well.
    std::fs::create_dir(workspace.join("nested")).expect("mkdir");
    assert!(is_reserved(
        root.make_parent_of(&path("nested/.GIT/config"))
    ));
    assert!(
        !workspace.join("nested/.git").exists(),
        "nothing was made while refusing"
    );
    // Names that only look alike are still written.
    assert!(writes(&root, ".gitx/config"));
    assert!(writes(&root, ".github/workflow.yml"));
    // The probe leaves nothing behind.
    let left: Vec<_> = std::fs::read_dir(&workspace)
        .expect("lists")
        .map(|entry| entry.expect("an entry").file_name())
        .filter(|name| name.to_string_lossy().starts_with(".once-probe"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn on_a_case_sensitive_file_system_the_other_spellings_are_ordinary_names() {
    let dir = std::env::temp_dir().join(format!("once-fs-exact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".git")).expect("git's folder");
    let root = Root::open(&dir).expect("opens the root");
    assert!(writes(&root, ".GIT/config"));
    assert!(
        !dir.join(".git/config").exists(),
        "`.GIT` is a folder of its own here"
    );
    assert!(is_reserved(root.make_parent_of(&path(".git/config"))));
    let _ = std::fs::remove_dir_all(&dir);
}
