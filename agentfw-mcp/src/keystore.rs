//! This device's keys in the home (TX2): `<home>/keys/device.key`, owner-only. Used by
//! `agentfw keys`, `seal`, `open`, `join`, and the daemon's relay link.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use agentfw_core::seal::DeviceKeys;

use crate::home::Home;

/// The paths of this device's key material in one home.
#[derive(Clone, Debug)]
pub struct KeyStore {
    pub dir: PathBuf,
}

impl KeyStore {
    /// `<home>/keys`, created owner-only if missing; refused if it is not the user's own
    /// directory.
    pub fn open(home: &Home) -> Result<Self, String> {
        let dir = home.dir.join("keys");
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create `{}`: {e}", dir.display())),
        }
        let meta = fs::symlink_metadata(&dir).map_err(|e| format!("cannot open `{}`: {e}", dir.display()))?;
        if !meta.is_dir() || meta.uid() != crate::home::uid() {
            return Err(format!("refusing to use `{}`: it is not a directory of yours", dir.display()));
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("cannot make `{}` owner-only: {e}", dir.display()))?;
        }
        Ok(Self { dir })
    }

    pub fn key_file(&self) -> PathBuf {
        self.dir.join("device.key")
    }

    pub fn replay_file(&self) -> PathBuf {
        self.dir.join("replay.json")
    }

    /// Whether this device has keys yet.
    pub fn exists(&self) -> bool {
        fs::symlink_metadata(self.key_file()).is_ok()
    }

    /// This device's keys. A key file that others can read is refused.
    pub fn load(&self) -> Result<DeviceKeys, String> {
        let path = self.key_file();
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(format!("this device has no keys yet (`{}`): run `agentfw keys new`", path.display()));
            }
            Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
        };
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "refusing to load `{}`: others can read it (mode {:o}); fix it with `chmod 600 {}` and, \
                 if someone else may have copied it, rotate the keys",
                path.display(),
                meta.mode() & 0o777,
                path.display()
            ));
        }
        if meta.uid() != crate::home::uid() {
            return Err(format!("refusing to load `{}`: it belongs to another user", path.display()));
        }
        let bytes =
            zeroize::Zeroizing::new(fs::read(&path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?);
        DeviceKeys::from_key_file(&bytes).map_err(|e| format!("`{}`: {e}", path.display()))
    }

    /// Writes the key file atomically, owner-only from its creation.
    pub fn save(&self, keys: &DeviceKeys) -> Result<(), String> {
        write_private(&self.key_file(), keys.to_key_file().as_bytes())
    }
}

/// Writes `contents` to `path` atomically with mode 0600: a temp file created 0600 in the
/// same directory, flushed, then renamed over `path`.
#[allow(clippy::disallowed_types)] // an adapter: this is where files are written
pub fn write_private(path: &Path, contents: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let _ = fs::remove_file(&tmp);
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok::<(), io::Error>(())
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write `{}`: {e}", path.display())
    })
}
