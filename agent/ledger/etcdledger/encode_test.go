package etcdledger

import (
	"bytes"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Hostile values under the prefix (a damaged or foreign etcd) are refused
// by name, never guessed at: a reply larger than its reservation, a
// running entry with reply bytes, an unknown version or state, a counter
// that is not a plain decimal.
func TestHostileEtcdValuesAreRefusedByName(t *testing.T) {
	good := entry{state: stateDone, expires: time.UnixMilli(1_800_000_000_000), reserve: 2048, end: 1_800_000_001, reply: []byte("reply")}
	enc := good.encode()
	if e, err := decodeEntry(enc); err != nil || !bytes.Equal(e.reply, good.reply) || e.reserve != 2048 || e.end != good.end || !e.expires.Equal(good.expires) {
		t.Fatalf("round trip: %+v %v", e, err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, enc...)) }
	for name, b := range map[string][]byte{
		"short":             enc[:entryHeader-1],
		"version":           mut(func(b []byte) []byte { b[0] = 2; return b }),
		"state":             mut(func(b []byte) []byte { b[1] = 9; return b }),
		"running with body": mut(func(b []byte) []byte { b[1] = stateRunning; return b }),
		"reply over":        mut(func(b []byte) []byte { return append(b, make([]byte, 2048)...) }),
		"reserve small":     mut(func(b []byte) []byte { b[10], b[11], b[12], b[13] = 0, 0, 0, 1; return b }),
		"zero expiry":       mut(func(b []byte) []byte { copy(b[2:10], make([]byte, 8)); return b }),
	} {
		if _, err := decodeEntry(b); amp.NameOf(err) != ErrBadValue {
			t.Errorf("%s: %v, want %s", name, err, ErrBadValue)
		}
	}
	for _, c := range []string{"", "-1", "+1", "01", "1e3", " 1", "99999999999999999999", "281474976710657", "4611686018427387904"} {
		if _, err := decodeCounter([]byte(c)); amp.NameOf(err) != ErrCounterCorrupt {
			t.Errorf("counter %q: %v", c, err)
		}
	}
	if n, err := decodeCounter([]byte("1180")); err != nil || n != 1180 {
		t.Fatalf("counter: %d %v", n, err)
	}
}

// A ledger URL names loopback or remote members and a plain prefix only:
// no userinfo, query, empty or dot segments, or more than 16 members.
func TestHostileLedgerURLsAreRefused(t *testing.T) {
	for _, u := range []string{"", "http://a:1", "etcd://", "etcd://a", "etcd://a:0", "etcd://a:65536", "etcd://a:01",
		"etcd://u@a:1", "etcd://a:1/x?y", "etcd://a:1/x//y", "etcd://a:1/../x", "etcd://a:1/x y",
		"etcd://" + string(bytes.Repeat([]byte("a:1,"), 16)) + "a:1"} {
		if _, _, err := ParseURL(u); amp.NameOf(err) != ErrBadURL {
			t.Errorf("%q: %v, want %s", u, err, ErrBadURL)
		}
	}
	if e, p, err := ParseURL("etcd://[::1]:2379,localhost:2380/a/b"); err != nil || len(e) != 2 || p != "/a/b/" {
		t.Fatalf("%v %q %v", e, p, err)
	}
}

// An entry is kept at most 1/32 of its life (and 1 s) past its expiry:
// the lease bucket it is charged to.
func TestBucketEndNeverBeforeExpiryNorMuchAfter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, left := range []time.Duration{0, 10 * time.Millisecond, time.Second, time.Minute, time.Hour, 7 * 24 * time.Hour} {
		exp := now.Add(left)
		end := time.Unix(bucketEnd(now, exp), 0)
		if end.Before(exp) || end.Sub(exp) > time.Second+left/32 {
			t.Errorf("left %s: bucket ends %s after expiry", left, end.Sub(exp))
		}
	}
	_ = ledger.MinReplyReserve
}

// A principal's counters, each within MaxCounter, never sum past it:
// a sum that would wrap (and lift the share) is refused as corrupt.
func TestCounterSumPastMaxRefusedNeverWrapped(t *testing.T) {
	for _, c := range []struct {
		sum, n, want int64
		ok           bool
	}{
		{0, 0, 0, true},
		{1180, 1180, 2360, true},
		{MaxCounter - 1, 1, MaxCounter, true},
		{MaxCounter, 1, 0, false},
		{1 << 62, 1 << 62, 0, false},
		{-1, 1, 0, false},
		{1, -1, 0, false},
	} {
		got, err := addCounter(c.sum, c.n)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("%d + %d: %d %v, want %d", c.sum, c.n, got, err, c.want)
		}
		if !c.ok && amp.NameOf(err) != ErrCounterCorrupt {
			t.Errorf("%d + %d: %d %v, want %s", c.sum, c.n, got, err, ErrCounterCorrupt)
		}
	}
}

// A bucket's lease outlives its end by the fleet's clock skew (FLEET-6):
// a node whose clock runs ahead by up to the skew never has etcd delete
// an entry before the end, by the right clock.
func TestBucketLeaseOutlivesEndByClockSkew(t *testing.T) {
	end := int64(1_800_000_000)
	at := func(sec int64, ms int) time.Time { return time.Unix(sec, int64(ms)*int64(time.Millisecond)) }
	for _, c := range []struct {
		now  time.Time
		skew time.Duration
		want int64
	}{
		{at(end-10, 0), 30 * time.Second, 41},
		{at(end-10, 999), 30 * time.Second, 41},
		{at(end-10, 0), 1500 * time.Millisecond, 13},
		{at(end+5, 0), 30 * time.Second, 26},
		{at(end+100, 0), 30 * time.Second, 1},
	} {
		if got := leaseTTL(end, c.now, c.skew); got != c.want {
			t.Errorf("now END%+d s, skew %v: TTL %d, want %d", c.now.Unix()-end, c.skew, got, c.want)
		}
		// by a clock that runs skew behind this node's, the lease ends
		// at or after end
		if c.now.Unix() <= end && c.now.Add(-c.skew).Unix()+leaseTTL(end, c.now, c.skew) < end {
			t.Errorf("now END%+d s, skew %v: the lease ends before END on a clock behind", c.now.Unix()-end, c.skew)
		}
	}
}
