package etcdledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Errors of this package (besides the ledger's).
const (
	// ErrBadURL: a ledger URL is not etcd://HOST:PORT[,HOST:PORT…][/PREFIX].
	ErrBadURL amp.ErrName = "bad_ledger_url"
	// ErrBadValue: a value under the prefix does not decode (docs/FORMAT.md,
	// "Ledger on etcd"); the entry is refused, never guessed at (5002).
	ErrBadValue amp.ErrName = "ledger_value_corrupt"
	// ErrClaimLost: this process's claim on a key went away (its session
	// lease expired: etcd did not hear from it in time) before the entry was
	// recorded; another process may have answered "outcome unknown" (5002,
	// retryable).
	ErrClaimLost amp.ErrName = "ledger_claim_lost"
	// ErrContended: the sender's quota counters changed under every one of
	// the bounded retries of a transaction, or the transaction waited for
	// this process's earlier ones of the same principal past its deadline
	// (5002, retryable).
	ErrContended amp.ErrName = "ledger_contended"
	// ErrCounterCorrupt: a usage counter under the prefix is not a decimal
	// count of 0 to MaxCounter, or has no lease (no node writes one: it is
	// deleted, docs/SPEC-DECISIONS.md FLEET-33), or a principal's counters
	// sum past MaxCounter: the principal's share is refused (5002), never
	// computed from a wrapped or guessed sum.
	ErrCounterCorrupt amp.ErrName = "ledger_counter_corrupt"
	// ErrAnswerTooLarge: etcd, or a proxy in front of it, answered a call
	// with more bytes than any answer to what the store asks can hold
	// (recvLimit): refused unread, and taken as an answer lost (5002,
	// retryable; docs/SPEC-DECISIONS.md FLEET-30).
	ErrAnswerTooLarge amp.ErrName = "ledger_answer_too_large"
)

// Limits of the encodings.
const (
	// DefaultPrefix is the key prefix when the URL names none.
	DefaultPrefix = "/ampagent/ledger/"
	// MaxReply is the largest reply the store records (1 MiB): etcd refuses
	// a request over --max-request-bytes (1.5 MiB by default). A larger
	// reservation is cut to it.
	MaxReply = 1 << 20
	// MaxCounter is the largest usage counter, and the largest sum of one
	// principal's counters, the store accepts (2^48 bytes, far above any
	// etcd's backend quota): a larger one is corrupt (ErrCounterCorrupt).
	MaxCounter = 1 << 48
	// maxURL, maxEndpoints and maxPrefix bound a ledger URL.
	maxURL       = 4096
	maxEndpoints = 16
	maxPrefix    = 256
	// entryHeader is the fixed part of an entry's value.
	entryHeader = 38
	// entryOverhead is what an entry counts besides its key and reply, as
	// the local stores count it.
	entryOverhead = 96
)

// Entry states in a value.
const (
	stateRunning byte = 1
	stateDone    byte = 2
	// stateUncounted is a running entry whose cost is on no usage counter
	// (a remake that could not charge one: docs/SPEC-DECISIONS.md FLEET-20,
	// review 35), so that whichever process finishes it, or makes it again,
	// takes nothing off a counter (FLEET-22). It decodes as running, with
	// uncounted set.
	stateUncounted byte = 3
	valueVersion   byte = 1
)

// ParseURL parses etcd://HOST:PORT[,HOST:PORT…][/PREFIX] into its
// endpoints (host:port, at most 16) and its key prefix ("/PREFIX/",
// DefaultPrefix when absent). PREFIX is letters, digits and "-_./".
func ParseURL(s string) (endpoints []string, prefix string, err error) {
	bad := func(why string) ([]string, string, error) {
		return nil, "", amp.Named(amp.CodeInvalidMessage, ErrBadURL, "ledger URL: %s (want etcd://HOST:PORT[,HOST:PORT…][/PREFIX])", why)
	}
	if len(s) > maxURL {
		return bad("too long")
	}
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return bad("not an etcd:// URL")
	}
	hosts, path, _ := strings.Cut(rest, "/")
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || strings.ContainsAny(host, "@?#% ") {
			return bad("an endpoint is not HOST:PORT")
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return bad("an endpoint's port is not 1-65535")
		}
		if len(endpoints) == maxEndpoints {
			return bad("more than 16 endpoints")
		}
		endpoints = append(endpoints, h)
	}
	path = strings.Trim(path, "/")
	if path == "" {
		return endpoints, DefaultPrefix, nil
	}
	if len(path) > maxPrefix {
		return bad("prefix too long")
	}
	for _, r := range path {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)) {
			return bad("prefix has a character other than letters, digits and -_./")
		}
	}
	if strings.Contains(path, "//") || strings.Contains("/"+path+"/", "/../") || strings.Contains("/"+path+"/", "/./") {
		return bad("prefix has an empty or dot segment")
	}
	return endpoints, "/" + path + "/", nil
}

// hash16 is the lowercase hex of the first 16 bytes of SHA-256(s).
func hash16(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// keys are the etcd keys of one ledger key.
type keys struct {
	entry, claim string
}

func keysOf(prefix string, k ledger.Key) keys {
	tail := hash16(k.Sender) + "/" + hex.EncodeToString(k.ID[:])
	return keys{entry: prefix + "e/" + tail, claim: prefix + "c/" + tail}
}

// usagePrefix is the prefix of a principal's usage counters; usageKey
// the one of the expiry bucket ending at end (unix seconds).
func usagePrefix(prefix, principalHash string) string { return prefix + "u/" + principalHash + "/" }

func usageKey(prefix, principalHash string, end int64) string {
	return usagePrefix(prefix, principalHash) + strconv.FormatInt(end, 10)
}

// entry is a decoded entry value.
type entry struct {
	state     byte
	expires   time.Time // unix milliseconds
	reserve   int64     // the largest reply recorded
	end       int64     // the expiry bucket (and lease) end, unix seconds
	principal [16]byte  // first 16 bytes of SHA-256(principal)
	reply     []byte    // done: the reply (non-nil)
	uncounted bool      // running, its cost on no counter (stateUncounted)
}

func (e entry) encode() []byte {
	b := make([]byte, entryHeader, entryHeader+len(e.reply))
	b[0], b[1] = valueVersion, e.state
	if e.state == stateRunning && e.uncounted {
		b[1] = stateUncounted
	}
	binary.BigEndian.PutUint64(b[2:], uint64(e.expires.UnixMilli()))
	binary.BigEndian.PutUint32(b[10:], uint32(e.reserve))
	binary.BigEndian.PutUint64(b[14:], uint64(e.end))
	copy(b[22:38], e.principal[:])
	return append(b, e.reply...)
}

// decodeEntry parses an entry value strictly: every field in range, a
// running entry without reply bytes, a done one within its reservation.
func decodeEntry(b []byte) (entry, error) {
	bad := func(why string) (entry, error) {
		return entry{}, amp.Named(amp.CodeUnavailable, ErrBadValue, "ledger entry on etcd: %s", why)
	}
	if len(b) < entryHeader {
		return bad("shorter than its header")
	}
	if b[0] != valueVersion {
		return bad("unknown version")
	}
	e := entry{state: b[1]}
	ms := int64(binary.BigEndian.Uint64(b[2:]))
	e.reserve = int64(binary.BigEndian.Uint32(b[10:]))
	e.end = int64(binary.BigEndian.Uint64(b[14:]))
	copy(e.principal[:], b[22:38])
	if ms <= 0 || e.end <= 0 || e.end > 1<<40 || ms > 1<<50 {
		return bad("expiry out of range")
	}
	e.expires = time.UnixMilli(ms)
	if e.reserve < ledger.MinReplyReserve || e.reserve > MaxReply {
		return bad("reservation out of range")
	}
	reply := b[entryHeader:]
	switch e.state {
	case stateRunning, stateUncounted:
		e.state, e.uncounted = stateRunning, e.state == stateUncounted
		if len(reply) != 0 {
			return bad("a running entry has reply bytes")
		}
	case stateDone:
		if int64(len(reply)) > e.reserve {
			return bad("reply larger than its reservation")
		}
		e.reply = append([]byte{}, reply...)
	default:
		return bad("unknown state")
	}
	return e, nil
}

// maxCountersOf is the most usage counters of one principal that a read
// of its prefix asks etcd for, and accepts (a principal with more is
// ErrCounterCorrupt, unread: docs/SPEC-DECISIONS.md FLEET-29), for the
// fleet's MaxClockSkew: 8,192 and two per second of skew, above twice
// the counters one principal's live buckets can number (bucketEnd:
// about 66 buckets of 1 s ahead, 33 more for each power of two up to
// 2^20 s, one per 2^20 s up to the largest MaxTTL, 100 years, and those
// whose lease still runs behind, up to 2 × skew + 1 s: some 3,740 and
// two per second of skew in all).
func maxCountersOf(skew time.Duration) int {
	return 8192 + 2*int((skew+time.Second-1)/time.Second)
}

// decodeCounter parses a usage counter: decimal ASCII, 0 to MaxCounter, no
// sign, no leading zero.
func decodeCounter(b []byte) (int64, error) {
	s := string(b)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > MaxCounter || strconv.FormatInt(n, 10) != s {
		return 0, amp.Named(amp.CodeUnavailable, ErrCounterCorrupt, "ledger usage counter on etcd is not a decimal count of 0 to 2^48")
	}
	return n, nil
}

// addCounter is sum + n for a principal's counters, each of 0 to
// MaxCounter: a sum past MaxCounter is refused, never wrapped.
func addCounter(sum, n int64) (int64, error) {
	if n < 0 || sum < 0 || n > MaxCounter-sum {
		return 0, amp.Named(amp.CodeUnavailable, ErrCounterCorrupt, "ledger usage counters on etcd sum past 2^48")
	}
	return sum + n, nil
}

// entryCost is what an entry of key k with n reply bytes counts: the same
// as the local stores (ledger.Limits).
func entryCost(k ledger.Key, n int64) int64 {
	return 2*int64(len(k.Sender)+17) + n + entryOverhead
}

// bucketEnd is the end (unix seconds) of the expiry bucket of an entry
// expiring at expires, seen at now: expires rounded up to a granule of
// 1 s, or of the smallest power of two seconds that keeps at most 64
// granules in what is left (an entry is kept at most 1 s, or 1/32 of its
// life, longer).
func bucketEnd(now, expires time.Time) int64 {
	left := expires.Sub(now)
	g := int64(1)
	for time.Duration(g)*64*time.Second < left && g < 1<<20 {
		g *= 2
	}
	sec := (expires.UnixMilli() + 999) / 1000
	return (sec + g - 1) / g * g
}
