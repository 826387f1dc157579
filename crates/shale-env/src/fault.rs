//! STUB
/// STUB
pub struct FaultFs;
/// STUB
pub struct FaultRule;
/// STUB
pub enum OpKind {}
