//! CAPO v0.14-compatible API types.
