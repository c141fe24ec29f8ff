package mirror

import (
	"context"
	"encoding/hex"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// HeartbeatTarget is a Target that can also apply heartbeat statements
// and list those it keeps (a *resolver.Store). Sync applies the
// heartbeats a mirror lists only to such a target; to another it reports
// none.
type HeartbeatTarget interface {
	Heartbeats() ([]resolver.KeptHeartbeat, error)
	ApplyHeartbeat(data []byte) (*resolver.HeartbeatResult, error)
}

// HeartbeatItem is what happened to one heartbeat the mirror lists.
type HeartbeatItem struct {
	BundleID string  `json:"bundle_id"`
	Version  uint64  `json:"version"`
	SHA256   string  `json:"sha256"`
	Outcome  Outcome `json:"outcome"` // imported = applied; current = the store keeps it, or one it does not move back from
	Stale    string  `json:"stale,omitempty"`
	Error    string  `json:"error,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// syncHeartbeats applies, after the bundles, the heartbeats of ix for the
// lines t has installed by then (a heartbeat judges an installed bundle;
// so a mirror listing heartbeats of made-up lines costs a host nothing)
// that t's store would take: not held back by the one it keeps while that
// one counts (resolver.KeptHeartbeat HoldsBack: the index's bundle_id,
// version and created_at only decide what to skip; what is applied is
// checked against them). Each is applied exactly as 'ampbundle import
// FILE' applies it: downloaded (bounded by the heartbeat size limit),
// checked against the index's size and SHA-256 and its statement against
// the index's line, version and time, then verified by the store against
// its own trust. A refused heartbeat changes nothing and is reported; after
// one whose download the mirror failed or that it served otherwise than
// listed (mirrorFailed), the following ones are not tried in this run
// (mirror_unreachable): one stall a list; the next run tries it last
// (failedLast).
func (c *syncClient) syncHeartbeats(ctx context.Context, t Target, ix *Index, dryRun bool) ([]HeartbeatItem, error) {
	out := []HeartbeatItem{}
	ht, ok := t.(HeartbeatTarget)
	if !ok || len(ix.Heartbeats) == 0 {
		return out, nil
	}
	kept, err := ht.Heartbeats()
	if amp.NameOf(err) == resolver.ErrUnsupported {
		c.log.Warn("heartbeats not synced: the store's agent does not list them through its admin socket", "err", err)
		return out, nil
	}
	if err != nil {
		return out, err
	}
	have := map[string]*resolver.KeptHeartbeat{}
	for i := range kept {
		have[kept[i].BundleID] = &kept[i]
	}
	bs, err := t.Bundles()
	if err != nil {
		return out, err
	}
	installed := map[string]bool{}
	for _, b := range bs {
		installed[b.BundleID] = true
	}
	run := listedRun{c: c, dryRun: dryRun}
	for _, e := range failedLast(c, ix.Heartbeats, heartbeatFailedKey) {
		if !installed[e.BundleID] {
			continue
		}
		it := HeartbeatItem{BundleID: e.BundleID, Version: e.Version, SHA256: e.SHA256}
		sum, _ := hex.DecodeString(e.SHA256) // checked by DecodeIndex
		// The same bytes kept are skipped only while they count: applied
		// again, a heartbeat that stopped counting is judged against the
		// trust of now, and may count again.
		k := have[e.BundleID]
		if it.Outcome, err = run.decide(k != nil && k.HoldsBack(e.Version, e.CreatedAt)); err != nil {
			it.Outcome, it.Error, it.Message = refusal(err)
		} else if it.Outcome == "" {
			if _, err := c.refusedBefore(sum); err != nil {
				it.Outcome, it.Error, it.Message = refusal(err)
			} else {
				c.fetchAndApplyHeartbeat(ctx, ht, e, sum, &it)
				run.fetched(it.Error, "the heartbeat of "+e.BundleID, heartbeatFailedKey(e))
			}
		}
		out = append(out, it)
		if err := interrupted(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// heartbeatFailedKey is the key of a listed heartbeat in the list of
// failed files (failedFiles).
func heartbeatFailedKey(e IndexHeartbeat) string { return failedHeartbeatPrefix + e.BundleID }

func (c *syncClient) fetchAndApplyHeartbeat(ctx context.Context, ht HeartbeatTarget, e IndexHeartbeat, sum []byte, it *HeartbeatItem) {
	refused := func(err error) { it.Outcome, it.Error, it.Message = refusal(err) }
	data, same, err := c.getListed(ctx, e.Href, e.Size, bundle.MaxHeartbeatSize, sum)
	if err != nil {
		refused(err)
		return
	}
	if !same {
		refused(amp.Named(0, ErrIndexMismatch, "the heartbeat served is not the one the index lists (size or SHA-256 differ): ignored"))
		return
	}
	// What the index said of it decided that it is worth applying: the
	// statement must say the same (its signatures are the store's to
	// check).
	hb, obj, err := bundle.ParseHeartbeat(data)
	if err != nil {
		refused(amp.Named(0, ErrIndexMismatch, "the file served is not a heartbeat statement (%s): ignored", amp.NameOf(err)).WithCause(err))
		return
	}
	if hb.BundleID != e.BundleID || hb.Version != e.Version || hb.CreatedAt != e.CreatedAt {
		refused(amp.Named(0, ErrIndexMismatch, "the heartbeat served says another line, version or time than the index lists: ignored"))
		return
	}
	// Judged by its line's bundle_id (the store also counts the
	// installed bundle's namespaces, so it may still refuse one).
	share, err := c.offerToStore(kindHeartbeat, sum, func(p *bundle.Policy) ([]bundle.TrustedKey, error) {
		keys, err := bundle.VerifyFor(obj, p, &bundle.Manifest{BundleID: hb.BundleID})
		if err == nil {
			// Every signature must verify, as the store requires
			// (TRUST-19): a forged co-signature is refused here, before
			// the store sees it.
			err = obj.VerifyAll()
		}
		return keys, err
	})
	if err != nil {
		refused(err)
		return
	}
	res, err := ht.ApplyHeartbeat(data)
	if err != nil {
		c.storeRefused(err, kindHeartbeat, share)
		refused(err)
		return
	}
	it.Outcome = OutcomeImported
	if res.Unchanged {
		it.Outcome = OutcomeCurrent
	}
	it.Stale = res.Stale
	c.log.Info("heartbeat applied", "bundle_id", e.BundleID, "version", e.Version, "unchanged", res.Unchanged)
}
