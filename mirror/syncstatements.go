package mirror

import (
	"context"
	"encoding/hex"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// StatementTarget is a Target that can also apply signed trust and
// revocation statements (a *resolver.Store). Sync applies the statements
// a mirror lists only to such a target; to another it reports none.
type StatementTarget interface {
	HasStatement(sum []byte) (bool, error)
	ApplyRevocation(data []byte) (*resolver.RevokeResult, error)
	ApplyRotation(data []byte) (*resolver.RotateResult, error)
}

// StatementItem is what happened to one statement the mirror lists.
type StatementItem struct {
	SHA256      string  `json:"sha256"`
	ContentType string  `json:"content_type"`
	Outcome     Outcome `json:"outcome"` // imported = applied
	Error       string  `json:"error,omitempty"`
	Message     string  `json:"message,omitempty"`
}

// syncStatements applies, in the index order, every statement of ix that
// t has not applied, each exactly as 'ampbundle import FILE' applies it:
// downloaded (bounded by the statement size limit), checked against the
// index's size, type and SHA-256, then verified by the store against its
// own trust. A refused statement changes nothing and is reported; the
// following ones are still tried (a gap in a trust chain refuses them as
// the store would), unless the mirror failed its download or served
// another file (mirrorFailed): the following ones are then not tried in
// this run (mirror_unreachable), so that a mirror stalling each download
// costs one stall a run. Unlike bundles and heartbeats, a statement the
// mirror failed in the run before is tried in its place, never moved
// last: a store applies statements in the order given, and one listed
// after it (a retirement or revocation of its signer, a raised
// threshold) would have it refused for good (listedRun.fetchedInPlace,
// docs/SPEC-DECISIONS.md MIRROR-29).
func (c *syncClient) syncStatements(ctx context.Context, t Target, ix *Index, dryRun bool) ([]StatementItem, error) {
	out := []StatementItem{}
	st, ok := t.(StatementTarget)
	if !ok {
		return out, nil
	}
	run := listedRun{c: c, dryRun: dryRun}
	for _, e := range ix.Statements {
		it := StatementItem{SHA256: e.SHA256, ContentType: e.ContentType}
		sum, _ := hex.DecodeString(e.SHA256) // checked by DecodeIndex
		has, err := st.HasStatement(sum)
		if amp.NameOf(err) == resolver.ErrUnsupported {
			// Through the admin socket of an agent older than this
			// program: its statements are not synced (listed as none),
			// its bundles still are.
			c.log.Warn("statements not synced: the store's agent does not apply them through its admin socket", "err", err)
			return []StatementItem{}, nil
		}
		if err != nil {
			return out, err
		}
		if it.Outcome, err = run.decide(has); err != nil {
			refuseStatement(&it, err)
		} else if it.Outcome == "" {
			if kept, err := c.refusedBefore(sum); kept {
				it.Outcome = OutcomeCurrent // a copy of a statement the store keeps
			} else if err != nil {
				refuseStatement(&it, err)
			} else {
				c.fetchAndApply(ctx, t, st, e, sum, &it)
				run.fetchedInPlace(it.Error, "statement "+e.SHA256, statementFailedKey(e))
			}
		}
		out = append(out, it)
		if err := interrupted(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// statementFailedKey is the key of a listed statement in the list of
// failed files (failedFiles).
func statementFailedKey(e IndexStatement) string { return failedStatementPrefix + e.SHA256 }

func (c *syncClient) fetchAndApply(ctx context.Context, t Target, st StatementTarget, e IndexStatement, sum []byte, it *StatementItem) {
	data, same, err := c.getListed(ctx, e.Href, e.Size, bundle.MaxRevocationSize, sum)
	if err != nil {
		refuseStatement(it, err)
		return
	}
	if !same || bundle.ContentType(data) != e.ContentType {
		refuseStatement(it, amp.Named(0, ErrIndexMismatch, "the statement served is not the one the index lists (size, type or SHA-256 differ): ignored"))
		return
	}
	scope, seq := rotationPlace(data, e.ContentType)
	if gen, err := c.gapBefore(scope, seq); err != nil {
		c.judged.note(c, sum, resolver.ErrRotationGap, gen)
		refuseStatement(it, err)
		return
	}
	share, err := c.offerToStore(kindStatement, sum, func(p *bundle.Policy) ([]bundle.TrustedKey, error) {
		return verifyStatementFile(data, e.ContentType, p)
	})
	if err != nil {
		refuseStatement(it, err)
		return
	}
	genBefore := c.storeGeneration()
	unchanged, err := applyStatement(st, e.ContentType, data)
	if err != nil {
		c.noteGap(err, scope, seq, genBefore)
		c.storeRefused(err, kindStatement, share)
		refuseStatement(it, err)
		return
	}
	if !unchanged {
		// The trust changed (keys added, retired or revoked): what
		// follows is judged against the new one.
		clear(c.gapFrom)
		if err := c.loadTrust(t); err != nil {
			c.log.Warn("the store's trust could not be read again after a statement", "err", err)
		}
	}
	it.Outcome = OutcomeImported
	if unchanged {
		it.Outcome = OutcomeCurrent
	}
	c.log.Info("statement applied", "sha256", e.SHA256, "content_type", e.ContentType, "unchanged", unchanged)
}

// applyStatement has the store apply a trust (rotation) or revocation
// statement; unchanged: it was applied before.
func applyStatement(st StatementTarget, ctype string, data []byte) (unchanged bool, err error) {
	if ctype == bundle.MediaTypeRotation {
		res, err := st.ApplyRotation(data)
		if err != nil {
			return false, err
		}
		return res.Unchanged, nil
	}
	res, err := st.ApplyRevocation(data)
	if err != nil {
		return false, err
	}
	return res.Unchanged, nil
}

func refuseStatement(it *StatementItem, err error) { it.Outcome, it.Error, it.Message = refusal(err) }

// verifyStatementFile checks the signatures of a trust (rotation) or
// revocation statement file as the store does, for its scope
// (bundle.VerifyStatement against p), and returns the keys it counted.
func verifyStatementFile(data []byte, ctype string, p *bundle.Policy) ([]bundle.TrustedKey, error) {
	var scope string
	var obj *bundle.SignedObject
	var err error
	if ctype == bundle.MediaTypeRotation {
		var r *bundle.Rotation
		if r, obj, err = bundle.ParseRotation(data); err == nil {
			scope = r.Scope
		}
	} else {
		var r *bundle.Revocation
		if r, obj, err = bundle.ParseRevocation(data); err == nil {
			scope = r.Scope
		}
	}
	if err != nil {
		return nil, err
	}
	return bundle.VerifyStatement(obj, p, scope)
}

// rotationPlace is the scope and sequence of a trust (rotation) statement
// file; "" and 0 for another file, or one that does not parse (the store
// judges it).
func rotationPlace(data []byte, ctype string) (string, uint64) {
	if ctype != bundle.MediaTypeRotation {
		return "", 0
	}
	r, _, err := bundle.ParseRotation(data)
	if err != nil {
		return "", 0
	}
	return r.Scope, r.Sequence
}

// gapBefore is the refusal, without offering it, of the trust statement
// of scope at sequence seq when the store refused one of the scope at a
// sequence not above it as rotation_gap in this sync, and applied no
// statement since: its chain still lacks the statement before, so this one
// would be refused the same way (and audited). gen is the store generation
// the gap was judged at; when the store has moved since (another sync may
// have filled the gap), the gap is forgotten and the statement offered.
func (c *syncClient) gapBefore(scope string, seq uint64) (gen uint64, err error) {
	g, ok := c.gapFrom[scope]
	if scope == "" || !ok || seq < g.seq {
		return 0, nil
	}
	if c.refusals != nil && c.refusals.Generation() != g.gen {
		delete(c.gapFrom, scope)
		return 0, nil
	}
	return g.gen, amp.Named(0, resolver.ErrRotationGap, "the store refused trust statement %d of this scope as out of order in this sync: %d is not offered (the statements before it are missing)", g.seq, seq)
}

// gapJudged is a rotation_gap refusal gapBefore goes by: the lowest
// sequence of its scope refused so, and the store generation it was
// refused at.
type gapJudged struct{ seq, gen uint64 }

// storeGeneration is the store's generation when the target says it
// (RefusalTarget; through an admin socket, as of its last answer), else 0.
func (c *syncClient) storeGeneration() uint64 {
	if c.refusals == nil {
		return 0
	}
	return c.refusals.Generation()
}

// noteGap notes a rotation_gap refusal of the trust statement of scope at
// sequence seq, offered when the store was at generation genBefore
// (gapBefore). A refusal after which the store's generation is not
// genBefore is not noted: the store moved while judging it (another sync
// applying statements), so the gap may be filled already.
func (c *syncClient) noteGap(err error, scope string, seq, genBefore uint64) {
	if scope == "" || amp.NameOf(err) != resolver.ErrRotationGap || c.storeGeneration() != genBefore {
		return
	}
	if c.gapFrom == nil {
		c.gapFrom = map[string]gapJudged{}
	}
	if g, ok := c.gapFrom[scope]; !ok || seq < g.seq {
		c.gapFrom[scope] = gapJudged{seq, genBefore}
	}
}
