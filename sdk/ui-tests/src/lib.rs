//! Compile tests of the SDK macros (see tests/).
