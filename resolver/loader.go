package resolver

import (
	bolt "go.etcd.io/bbolt"
)

// BundleLoader serves the artifacts of one installed bundle, each checked
// against the hash its bundle declared before it is returned, and maps a
// schema "$id" to its key: the loader shape of the offline schema compiler
// and of the compatibility checker (package compat). Each call reads in
// its own read transaction.
type BundleLoader struct {
	s      *Store
	bundle string
}

// Loader returns the BundleLoader of an installed bundle.
func (s *Store) Loader(bundleID string) *BundleLoader { return &BundleLoader{s: s, bundle: bundleID} }

// Load returns the verified bytes of the artifact at key.
func (l *BundleLoader) Load(key string) ([]byte, error) {
	var out []byte
	err := l.s.db.View(func(tx *bolt.Tx) error {
		sl := &storeLoader{s: l.s, tx: tx, bundle: l.bundle}
		b, err := sl.Load(key)
		out = b
		return err
	})
	return out, err
}

// KeyForID returns the key of the bundle's schema that declares id.
func (l *BundleLoader) KeyForID(id string) (key string, ok bool) {
	_ = l.s.db.View(func(tx *bolt.Tx) error {
		sl := &storeLoader{s: l.s, tx: tx, bundle: l.bundle}
		key, ok = sl.KeyForID(id)
		return nil
	})
	return key, ok
}
