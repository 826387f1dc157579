//! STUB
/// STUB
pub struct CrashFs;
