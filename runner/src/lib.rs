//! icrun: an offline Internet Computer runtime (work in progress).
