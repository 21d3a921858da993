package bpf

import "crypto/sha256"

// ObjectDigest identifies the compiled object LoadOnce reads. Whatever is
// derived from the object and kept across runs (the collector's cache of
// kernel-specific instruction fixups) is valid for this digest only.
func ObjectDigest() [sha256.Size]byte { return sha256.Sum256(_OnceBytes) }
