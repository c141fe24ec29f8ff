package resolver

import (
	"context"
	"io"

	"github.com/ampbundle/ampbundle/bundle"
)

// CheckImport judges the bundle in r as Import would, without installing,
// staging or auditing anything: it verifies it with the store's trust
// keys and thresholds (signatures, scope, expiry by the store's clock and
// by the bundle's time floor) and applies the refusals Import makes
// before staging (checkBeforeStaging: a revoked version, a rollback, a
// floor pinned for the version, a conflict, a delta's base), then reads
// and checks every artifact. nil means Import would go on to stage it (or
// find it installed already: res.Unchanged); an error is the refusal
// Import would give, by the same name. It takes no write lock, so a write
// between it and an Import may change the verdict; it is a read of the
// store's state, used where a candidate is only judged (ampbundle sync
// --oci, a cut newest version: docs/SPEC-DECISIONS.md OCI-9). Like an
// Import it is registered with Close: Close waits for it, and once Close
// begins it reads r for at most cancelGrace more and answers store_io
// (a check still reading at Close answered about a closed store).
func (s *Store) CheckImport(r io.Reader) (res *ImportResult, err error) {
	ctx, _, end, err := s.beginImport(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	defer end()
	stream := newImportStream(ctx, r)
	defer stream.close()
	defer func() {
		if ctx.Err() != nil {
			res, err = nil, fail(ErrStoreIO, "the store closed during the check").WithCause(err)
		}
	}()
	policy, err := s.policy()
	if err != nil {
		return nil, err
	}
	br, err := bundle.NewReader(stream, bundle.ReaderOptions{Policy: policy, Now: s.opts.Now,
		MaxArtifactSize: s.opts.MaxArtifactSize, AllowDelta: true})
	if err != nil {
		return nil, err
	}
	res = importResultOf(br)
	if err := s.checkFloorExpiry(br.Manifest()); err != nil {
		return nil, err
	}
	unchanged, _, err := s.checkBeforeStaging(br, ImportOptions{}, res)
	if err != nil {
		return nil, err
	}
	res.Unchanged = unchanged
	if err := br.VerifyRest(); err != nil {
		return nil, err
	}
	return res, nil
}
