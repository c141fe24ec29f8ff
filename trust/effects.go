package trust

import (
	"bytes"
	"cmp"
	"slices"
	"sort"

	"github.com/ampbundle/ampbundle/bundle"
)

// Event is one audit entry a change writes (docs/FORMAT.md §20); the
// store adds the sequence, time, actor and chain.
type Event struct {
	Action         string
	Verdict        string
	TrustName      string
	Key            string // did:key
	Scopes         []string
	Threshold      uint64
	BundleID       string
	Version        uint64
	Signers        []string
	FileSHA256     []byte
	RevokedKeys    []string
	RevokedBundles []string
	Sequence       uint64
	AddedKeys      []string
	RetiredKeys    []string
}

// Effects is what a store writes to go from one State to the next, in
// the transaction in which it loaded the first: the records that differ
// (Diff: new or changed values by key, and the keys that go), the
// statement it keeps, and the audit events, in order.
type Effects struct {
	Keys       map[string]Key // by name
	DeleteKeys []string       // names
	// Thresholds are the scopes whose threshold changed; 1 removes the
	// setting.
	Thresholds map[string]uint64
	RevokeKeys map[string]Revocation // did:key -> its new record
	// RemovedKeys are the keys trust rm removed (did:key -> the trust name
	// it had); DeleteRemovedKeys those trusted again.
	RemovedKeys       map[string]string
	DeleteRemovedKeys []string
	RevokeVersions    map[bundle.BundleVersion]Revocation
	FailClosed        map[bundle.BundleVersion]string // installed bundle -> why it now fails closed
	Heartbeats        map[string]Heartbeat
	// DeleteHeartbeats are the lines whose heartbeat (and its bytes) go.
	DeleteHeartbeats []string
	// HeartbeatData is the heartbeat file to keep for a mirror, by
	// bundle_id.
	HeartbeatData map[string][]byte
	Freshness     map[string]Freshness
	KeyFloors     map[string]int64
	TimeFloor     int64 // the new newest signed time; 0: unchanged
	// BundleFloors are the floors pinned for installed bundle versions
	// (Installed.Floor, with its FloorKeys; a zero Floor: the pin is gone).
	BundleFloors map[bundle.BundleVersion]Pin
	// Chain is the trust statement appended to a scope's chain.
	Chain *ChainLink
	// Statement is a signed statement to keep (once per StatementID) in
	// the order of application; nil for none.
	Statement []byte
	// StatementID is Statement's identity, the SHA-256 of its payload
	// (bundle.SignedObject.PayloadSHA256): a file with the same payload
	// and other signatures (a signature added by anyone, the signatures
	// reordered or some dropped) is the same statement, which a store
	// keeping it keeps and charges no second time (docs/SPEC-DECISIONS.md
	// TRUST-19).
	StatementID []byte
	// StatementAccounts are the accounts of the keys that counted for
	// Statement (State.Account), sorted: the store charges it to one of
	// them when it keeps it (ChargeStatement).
	StatementAccounts []string
	// StatementCharge is how many kept statements of its account's share
	// Statement is charged as (0 is 1): a revocation, one for each
	// record of a key that stays trusted it lengthens without
	// withdrawing any of the key's trust; a trust statement, one for
	// each scope of the revocations of the keys it trusts. Every load of
	// the store's trust state reads those (docs/SPEC-DECISIONS.md
	// TRUST-33, ChargeStatementAs).
	StatementCharge int
	Audit           []Event
	// Changed says that the store's generation changes.
	Changed bool
}

// Base returns e itself: the Effects of a statement kind's result, which
// embeds them.
func (e *Effects) Base() *Effects { return e }

// ChainLink is an applied trust statement of Scope at Seq.
type ChainLink struct {
	Scope string
	ChainEntry
}

// Pin is the floor pinned for an installed bundle version and the
// did:keys it rests on (Installed.Floor, Installed.FloorKeys).
type Pin struct {
	Floor int64
	Keys  []string
}

// Diff returns the record changes from prev to next (the Effects fields
// Keys to TimeFloor; Chain, Statement, Audit and Changed are the
// caller's).
func Diff(prev, next *State) *Effects {
	e := &Effects{FailClosed: map[bundle.BundleVersion]string{}, HeartbeatData: map[string][]byte{}, BundleFloors: map[bundle.BundleVersion]Pin{}}
	e.Keys, _ = diff(prev.Keys, next.Keys, sameKey)
	e.DeleteKeys = removed(prev.Keys, next.Keys)
	e.Thresholds, _ = diff(prev.Thresholds, next.Thresholds, equal)
	for _, sc := range removed(prev.Thresholds, next.Thresholds) {
		e.Thresholds[sc] = 1
	}
	e.RevokeKeys, _ = diff(prev.RevokedKeys, next.RevokedKeys, sameRevocation)
	e.RemovedKeys, _ = diff(prev.RemovedKeys, next.RemovedKeys, equal)
	e.DeleteRemovedKeys = removed(prev.RemovedKeys, next.RemovedKeys)
	e.RevokeVersions, _ = diff(prev.RevokedVersions, next.RevokedVersions, func(Revocation, Revocation) bool { return true })
	e.Heartbeats, _ = diff(prev.Heartbeats, next.Heartbeats, sameHeartbeat)
	e.DeleteHeartbeats = removed(prev.Heartbeats, next.Heartbeats)
	e.Freshness, _ = diff(prev.Freshness, next.Freshness, equal)
	e.KeyFloors, _ = diff(prev.KeyFloors, next.KeyFloors, equal)
	for id, in := range next.Installed {
		if in.Revoked != "" && prev.Installed[id].Revoked == "" {
			e.FailClosed[bundle.BundleVersion{BundleID: id, Version: in.Version}] = in.Revoked
		}
		if was := prev.Installed[id]; (in.Floor != 0 || was.Version == in.Version) && (in.Floor != was.Floor || !slices.Equal(in.FloorKeys, was.FloorKeys)) {
			e.BundleFloors[bundle.BundleVersion{BundleID: id, Version: in.Version}] = Pin{Floor: in.Floor, Keys: in.FloorKeys}
		}
	}
	if next.TimeFloor != prev.TimeFloor {
		e.TimeFloor = next.TimeFloor
	}
	return e
}

// diff returns the entries of next that prev lacks or holds otherwise,
// and the keys of prev that next lacks.
func diff[K comparable, V any](prev, next map[K]V, same func(a, b V) bool) (map[K]V, []K) {
	put := map[K]V{}
	for k, v := range next {
		if old, ok := prev[k]; !ok || !same(old, v) {
			put[k] = v
		}
	}
	var gone []K
	for k := range prev {
		if _, ok := next[k]; !ok {
			gone = append(gone, k)
		}
	}
	return put, gone
}

// removed returns the keys of prev that next lacks, sorted.
func removed[K cmp.Ordered, V any](prev, next map[K]V) []K {
	var out []K
	for k := range prev {
		if _, ok := next[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func equal[V comparable](a, b V) bool { return a == b }

func sameKey(a, b Key) bool {
	return a.Name == b.Name && a.Key.Equal(b.Key) && slices.Equal(a.Scopes, b.Scopes) && a.AddedAt == b.AddedAt && a.Origin == b.Origin
}

func sameRevocation(a, b Revocation) bool {
	return bytes.Equal(a.StatementSHA256, b.StatementSHA256) && a.At == b.At && slices.Equal(a.Scopes, b.Scopes)
}

func sameHeartbeat(a, b Heartbeat) bool {
	return a.Version == b.Version && a.CreatedAt == b.CreatedAt && bytes.Equal(a.StatementSHA256, b.StatementSHA256) &&
		a.At == b.At && slices.Equal(a.Signers, b.Signers) && a.Unreadable == b.Unreadable &&
		a.Threshold == b.Threshold && bytes.Equal(a.LineSHA256, b.LineSHA256) && a.Charged == b.Charged
}

// FailedClosed returns the installed bundles e fails closed, as
// bundle_id@version, sorted.
func (e *Effects) FailedClosed() []string {
	out := []string{}
	for v := range e.FailClosed {
		out = append(out, v.String())
	}
	sort.Strings(out)
	return out
}
