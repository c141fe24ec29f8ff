// Package bundlebuild is the build room of bundle files: everything that
// reads or writes files on disk around the format that package bundle
// owns.
//
//   - LoadSource reads a source folder (docs/FORMAT.md §8), checks it —
//     layout, JSON Schemas (on a pool of workers with the bytes in flight
//     bounded, docs/PERFORMANCE.md P8), DID documents, descriptors — and
//     derives the signed compatibility claims (package compat). It returns
//     a bundle.Draft for bundle.Write.
//   - SplitFile cuts a bundle file into part files and writes their signed
//     index (bundle.PartIndex, docs/FORMAT.md §13), all or nothing across
//     a kill; LocateParts and PartsReader find the parts of an index and
//     read them back as one stream, each part checked as it ends.
//   - CreateTemp, MkdirTemp and RemoveStaleTemps are the locked temporary
//     files of every writer of bundle files, and the clean-up of those a
//     killed run left behind.
//
// Package bundle stays the format and its statements: it opens no file and
// imports no compat (deps_test.go at the repository root keeps it so).
// The name is bundlebuild rather than build so that it neither shadows the
// standard library's go/build nor reads as a generic verb at call sites.
package bundlebuild
