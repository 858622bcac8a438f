//! Writing config files safely: atomically (temp file + rename), keeping permissions, and
//! with a timestamped backup of what is replaced.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The contents of `path`, `None` if there is no such file. Any other failure (no
/// permission, not UTF-8) is an error: a file that cannot be read must not be mistaken
/// for a missing one and overwritten.
pub fn read(path: &Path) -> Result<Option<String>, String> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read `{}`: {e}", path.display())),
    }
}

/// The file a write to `path` lands in: the target of a symlink (a dotfile managed from
/// elsewhere stays a symlink), else `path` itself.
fn real(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Writes `contents` to `path` atomically: a temp file in the same directory, flushed, given
/// the old file's permissions (or `mode` for a new file, if given), then renamed over it.
#[allow(clippy::disallowed_types)] // an adapter: this is where files are written
pub fn write_atomic(path: &Path, contents: &str, mode: Option<u32>) -> Result<(), String> {
    let target = real(path);
    let fail = |what: &str, e: io::Error| format!("cannot {what} `{}`: {e}", target.display());
    let dir = target.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.agentfw-{}.tmp", std::process::id()));
    let permissions = match fs::metadata(&target) {
        Ok(meta) => Some(meta.permissions()),
        Err(_) => mode.map(fs::Permissions::from_mode),
    };
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        if let Some(p) = &permissions {
            fs::set_permissions(&tmp, p.clone())?;
        }
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        fs::rename(&tmp, &target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail("write", e));
    }
    Ok(())
}

/// Removes `path` (the target, if it is a symlink).
pub fn remove(path: &Path) -> Result<(), String> {
    let target = real(path);
    fs::remove_file(&target).map_err(|e| format!("cannot remove `{}`: {e}", target.display()))
}

/// A place for the backups of one run: `<agentfw home>/backups/<UTC time>/`, owner-only.
#[derive(Debug)]
pub struct Backups {
    dir: PathBuf,
}

impl Backups {
    #[allow(clippy::disallowed_methods)]
    pub fn new(agentfw_home: &Path) -> Self {
        let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
        let stamp = now.format("%Y%m%dT%H%M%SZ").to_string();
        let base = agentfw_home.join("backups");
        let mut dir = base.join(&stamp);
        let mut n = 1;
        while dir.exists() {
            n += 1;
            dir = base.join(format!("{stamp}-{n}"));
        }
        Self { dir }
    }

    /// Copies `contents`, the current text of `path`, into the backup directory (under the
    /// path's own absolute path) with the file's permissions, and says where.
    pub fn save(&self, path: &Path, contents: &str) -> Result<PathBuf, String> {
        if let Some(base) = self.dir.parent() {
            owner_only_dir(base)?;
        }
        owner_only_dir(&self.dir)?;
        let rel: PathBuf = path.components().filter(|c| matches!(c, std::path::Component::Normal(_))).collect();
        let backup = self.dir.join(rel);
        let mode = fs::metadata(real(path)).map(|m| m.permissions().mode()).unwrap_or(0o600);
        write_atomic(&backup, contents, Some(mode & 0o700))?;
        Ok(backup)
    }
}

/// Creates `dir` (and its parents) and makes it owner-only.
pub fn owner_only_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot make `{}` owner-only: {e}", dir.display()))
}
