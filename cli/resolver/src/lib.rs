//! Version resolution (being written).
