//! Memory-limited control groups for `bench compare --memory`: a read phase
//! runs in a group whose limit covers the harness's memory and the page cache
//! its buffered reads fill, so that every engine gets the same budget.
//!
//! cgroup v2 is used where its memory controller is mounted
//! (`/sys/fs/cgroup/cgroup.controllers` lists `memory`), else v1's
//! `/sys/fs/cgroup/memory`. Creating a group and dropping the page cache need
//! root.

use std::path::{Path, PathBuf};

/// A memory-limited control group, removed when dropped.
pub struct MemoryGroup {
    dir: PathBuf,
}

const V2_ROOT: &str = "/sys/fs/cgroup";
const V1_ROOT: &str = "/sys/fs/cgroup/memory";

impl MemoryGroup {
    /// Creates a group named `name` limited to `limit_bytes` of memory (page
    /// cache included), without swap.
    pub fn create(name: &str, limit_bytes: u64) -> Result<MemoryGroup, String> {
        let v2 = std::fs::read_to_string(Path::new(V2_ROOT).join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
        let root = if v2 { V2_ROOT } else { V1_ROOT };
        if !Path::new(root).is_dir() {
            return Err(format!(
                "no memory control group hierarchy at {root}: --memory needs cgroup v1 or v2 \
                 with the memory controller"
            ));
        }
        let dir = Path::new(root).join(name);
        std::fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "cannot create the control group {}: {e} (--memory needs root)",
                dir.display()
            )
        })?;
        let group = MemoryGroup { dir };
        if v2 {
            group.write("memory.max", limit_bytes)?;
            // Swap would let the group exceed its budget without reading.
            let _ = group.write("memory.swap.max", 0);
        } else {
            group.write("memory.limit_in_bytes", limit_bytes)?;
            let _ = group.write("memory.memsw.limit_in_bytes", limit_bytes);
        }
        Ok(group)
    }

    fn write(&self, file: &str, value: u64) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value.to_string())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The command that runs `program args` inside the group: a shell that
    /// moves itself into the group, then becomes the program, so that the
    /// program's every allocation and page-cache page is charged to it.
    pub fn wrap(&self, program: &Path, args: &[String]) -> (PathBuf, Vec<String>) {
        let procs = self.dir.join("cgroup.procs");
        let mut wrapped = vec![
            "-c".to_string(),
            "echo $$ > \"$0\" && exec \"$@\"".to_string(),
            procs.to_string_lossy().into_owned(),
            program.to_string_lossy().into_owned(),
        ];
        wrapped.extend(args.iter().cloned());
        (PathBuf::from("/bin/sh"), wrapped)
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        // Its one process has exited by now; an empty group can be removed.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Writes dirty pages back and drops the page cache, so that a read phase
/// starts with nothing of the database in memory.
pub fn drop_page_cache() -> Result<(), String> {
    let status = std::process::Command::new("sync")
        .status()
        .map_err(|e| format!("cannot run sync: {e}"))?;
    if !status.success() {
        return Err("sync failed".into());
    }
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        format!("cannot drop the page cache (/proc/sys/vm/drop_caches): {e} (--memory needs root)")
    })
}
