//! Package archives (being written).
