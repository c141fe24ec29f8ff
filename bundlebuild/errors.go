package bundlebuild

import "github.com/ampbundle/ampbundle/amp"

// fail is a named error of a build or of part files: the names are
// bundle's (bundle.ErrSource, bundle.ErrIO, ...) and this package's own
// ErrFileExists.
func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}
