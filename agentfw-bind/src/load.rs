//! Reading rule, pattern, placeholder and case files from disk, for the core, which reads
//! none itself. The `agentfw` binary and both bindings read rule folders this way, so a
//! folder means the same thing everywhere.

use std::path::{Path, PathBuf};

use agentfw_core::policy::SourceFile;

/// Why rule files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read `{}`: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("`{}` holds no `.yaml` or `.yml` files", .0.display())]
    NoFiles(PathBuf),
}

/// Every `.yaml`/`.yml` file at `paths` (a file is taken whatever its name; directories
/// are searched recursively, in name order), each named by its path. A path that holds no
/// such file is an error: a rules folder that is empty by mistake would otherwise load as
/// "no rules".
pub fn read(paths: &[PathBuf]) -> Result<Vec<SourceFile>, ReadError> {
    let mut files = Vec::new();
    for path in paths {
        let mut found = Vec::new();
        collect(path, &mut found)?;
        if found.is_empty() {
            return Err(ReadError::NoFiles(path.clone()));
        }
        for file in found {
            let text = std::fs::read_to_string(&file).map_err(|source| ReadError::Io { path: file.clone(), source })?;
            files.push(SourceFile::new(file.display().to_string(), text));
        }
    }
    Ok(files)
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), ReadError> {
    let io = |source| ReadError::Io { path: path.to_owned(), source };
    if !std::fs::metadata(path).map_err(io)?.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        entries.push(entry.map_err(io)?.path());
    }
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if entry.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(files: &[SourceFile], root: &Path) -> Vec<String> {
        let root = root.display().to_string();
        files.iter().map(|f| f.name.trim_start_matches(&root).replace('\\', "/")).collect()
    }

    #[test]
    fn folders_are_read_recursively_in_name_order_yaml_only() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("b"))?;
        std::fs::write(dir.path().join("b/z.yml"), "rules: []\n")?;
        std::fs::write(dir.path().join("a.yaml"), "rules: []\n")?;
        std::fs::write(dir.path().join("notes.txt"), "not rules")?;
        let files = read(&[dir.path().to_owned()])?;
        assert_eq!(names(&files, dir.path()), ["/a.yaml", "/b/z.yml"]);
        Ok(())
    }

    #[test]
    fn a_missing_path_and_an_empty_folder_are_errors_naming_the_path() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let missing = dir.path().join("missing");
        let err = read(std::slice::from_ref(&missing)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.starts_with(&format!("cannot read `{}`", missing.display())), "{err}");
        let err = read(&[dir.path().to_owned()]).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, format!("`{}` holds no `.yaml` or `.yml` files", dir.path().display()));
        Ok(())
    }
}
