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
    v2: bool,
}

/// How hard a group's limit pressed on what ran in it, from the kernel's
/// counters of the group (`None` where its cgroup version has no such
/// counter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pressure {
    /// Pages of files read again after the limit had evicted them (cgroup
    /// v2's `workingset_refault_file`, or `workingset_refault` before Linux
    /// 5.9): the group thrashed when this grows with every operation.
    pub refaults: Option<u64>,
    /// Processes of the group the kernel killed for memory (v2's
    /// `memory.events` `oom_kill`, v1's `memory.oom_control`).
    pub oom_kills: Option<u64>,
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
        let group = MemoryGroup { dir, v2 };
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

    /// The group's pressure counters so far.
    pub fn pressure(&self) -> Pressure {
        let read = |file: &str| std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        if self.v2 {
            let stat = read("memory.stat");
            Pressure {
                refaults: counter(&stat, "workingset_refault_file")
                    .or_else(|| counter(&stat, "workingset_refault")),
                oom_kills: counter(&read("memory.events"), "oom_kill"),
            }
        } else {
            Pressure {
                refaults: None,
                oom_kills: counter(&read("memory.oom_control"), "oom_kill"),
            }
        }
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

/// The value of `name` in a file of `name value` lines (`memory.stat`).
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_by_name() {
        let stat = "anon 4096\nworkingset_refault_anon 0\nworkingset_refault_file 1234\n";
        assert_eq!(counter(stat, "workingset_refault_file"), Some(1234));
        assert_eq!(counter(stat, "workingset_refault"), None);
        assert_eq!(counter("oom 0\noom_kill 2\n", "oom_kill"), Some(2));
        assert_eq!(counter("oom_kill x\n", "oom_kill"), None);
    }
}
