//! Versions: the set of tables per level, and the manifest that records them.
