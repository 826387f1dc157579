//! STUB
/// STUB
pub struct MemFs;
