//! STUB
/// STUB
#[derive(Clone, Debug, Default)]
pub struct PosixOptions {
    pub direct_io: bool,
}
/// STUB
pub struct PosixFs;
impl PosixFs {
    pub fn new(_o: PosixOptions) -> PosixFs {
        PosixFs
    }
}
impl crate::FileSystem for PosixFs {
    fn create_append(
        &self,
        _: &std::path::Path,
        _: crate::WriteLifetime,
    ) -> std::io::Result<Box<dyn crate::AppendFile>> {
        todo!()
    }
    fn create_object(
        &self,
        _: &std::path::Path,
        _: crate::WriteLifetime,
    ) -> std::io::Result<Box<dyn crate::ObjectWriter>> {
        todo!()
    }
    fn open_random(
        &self,
        _: &std::path::Path,
    ) -> std::io::Result<std::sync::Arc<dyn crate::RandomAccessFile>> {
        todo!()
    }
    fn list(&self, _: &std::path::Path) -> std::io::Result<Vec<String>> {
        todo!()
    }
    fn rename(&self, _: &std::path::Path, _: &std::path::Path) -> std::io::Result<()> {
        todo!()
    }
    fn remove(&self, _: &std::path::Path) -> std::io::Result<()> {
        todo!()
    }
    fn create_dir_all(&self, _: &std::path::Path) -> std::io::Result<()> {
        todo!()
    }
    fn exists(&self, _: &std::path::Path) -> std::io::Result<bool> {
        todo!()
    }
    fn file_size(&self, _: &std::path::Path) -> std::io::Result<u64> {
        todo!()
    }
    fn sync_dir(&self, _: &std::path::Path) -> std::io::Result<()> {
        todo!()
    }
    fn lock(&self, _: &std::path::Path) -> std::io::Result<Box<dyn crate::FileLock>> {
        todo!()
    }
}
