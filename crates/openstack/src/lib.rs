//! OpenStack client layer.
