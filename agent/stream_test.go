package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// received records what Config.Streams was handed.
type received struct {
	mu   sync.Mutex
	got  map[string][]byte
	info []StreamInfo
}

func (r *received) handler(ctx context.Context, info StreamInfo, content io.Reader) error {
	b, err := io.ReadAll(content)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string][]byte{}
	}
	r.got[info.StreamID] = b
	r.info = append(r.info, info)
	return nil
}

// vectorRegistry resolves the RFC 001 A.1 did:web documents, the rest from
// the store.
type vectorRegistry struct {
	Registry
	docs map[string]*amp.DIDDocument
}

func (r vectorRegistry) ResolveDID(ctx context.Context, did string) (*amp.DIDDocument, error) {
	if d, ok := r.docs[did]; ok {
		return d, nil
	}
	return r.Registry.ResolveDID(ctx, did)
}

type a5Vector struct {
	NowMS  int64 `json:"now_ms"`
	Output struct {
		Message string `json:"message"`
	} `json:"output"`
}

// TestA5StreamVectorsEndToEnd drives the RFC 001 A.5 STREAM_START,
// STREAM_DATA and STREAM_END messages, as published, through the agent
// (as bob): the first two get no reply, the STREAM_END exactly one ACK
// with stream_id, chunks_received and verified: true, and the application
// receives "hello".
func TestA5StreamVectorsEndToEnd(t *testing.T) {
	dir := filepath.Join("..", "testdata", "vectors")
	files, err := filepath.Glob(filepath.Join(dir, "a5-stream-*.json"))
	if err != nil || len(files) != 3 {
		t.Fatalf("want the three A.5 stream vectors, found %v (%v)", files, err)
	}
	var keys struct {
		Seed string            `json:"ed25519_seed"`
		DIDs map[string]string `json:"dids"`
	}
	readJSON(t, filepath.Join(dir, "keys-a1.json"), &keys)
	docs := map[string]*amp.DIDDocument{}
	for did, f := range keys.DIDs {
		data, err := os.ReadFile(filepath.Join(dir, f))
		must(t, err)
		d, err := amp.ParseDIDDocument(data)
		must(t, err)
		docs[did] = d
	}
	seed, err := hex.DecodeString(keys.Seed)
	must(t, err)
	const alice, bob = "did:web:example.com:agent:alice", "did:web:example.com:agent:bob"
	var msgs [][]byte
	var now int64
	for _, name := range []string{"start", "data", "end"} {
		var v a5Vector
		readJSON(t, filepath.Join(dir, "a5-stream-"+name+".json"), &v)
		b, err := hex.DecodeString(v.Output.Message)
		must(t, err)
		msgs = append(msgs, b)
		now = v.NowMS
	}
	rec := &received{}
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Identity = amp.Identity{DID: bob, SigningKey: ed25519.NewKeyFromSeed(seed)}
		c.registry = vectorRegistry{Registry: storeRegistry{c.Store}, docs: docs}
		c.Policy = Rules{{Caller: alice, Prefix: "*"}}
		c.Streams = rec.handler
	}), func(e *env) { e.clock.t = time.UnixMilli(now) })
	for i, msg := range msgs[:2] {
		reply, err := e.agent.Handle(context.Background(), msg)
		if err != nil || reply != nil {
			t.Fatalf("message %d: reply %x, err %v; want no reply", i, reply, err)
		}
	}
	raw, err := e.agent.Handle(context.Background(), msgs[2])
	if err != nil || raw == nil {
		t.Fatalf("STREAM_END: %v", err)
	}
	r, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now, DIDs: vectorRegistry{docs: docs}})
	must(t, err)
	ack, err := r.Receive(context.Background(), raw)
	must(t, err)
	if ack.Type != amp.TypeAck || ack.From != bob || !ack.To.Contains(alice) {
		t.Fatalf("reply is %s from %s", ack.Type, ack.From)
	}
	b, err := amp.DecodeAck(ack.Body)
	must(t, err)
	if b.StreamID != "stream-001" || b.ChunksReceived == nil || *b.ChunksReceived != 1 || b.Verified == nil || !*b.Verified || b.AckSource != amp.AckFromRecipient {
		t.Fatalf("ack body %+v", b)
	}
	if string(rec.got["stream-001"]) != "hello" || rec.info[0].Sender != alice || rec.info[0].Filename != "hello.txt" {
		t.Fatalf("application got %q, %+v", rec.got["stream-001"], rec.info)
	}
	// A replayed STREAM_END gets the byte-identical ACK from the ledger;
	// the application is not handed the stream twice.
	again, err := e.agent.Handle(context.Background(), msgs[2])
	if err != nil || !bytes.Equal(again, raw) || len(rec.info) != 1 {
		t.Fatalf("replayed STREAM_END: identical %v, err %v, hand-offs %d", bytes.Equal(again, raw), err, len(rec.info))
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	must(t, json.Unmarshal(data, v))
}

// streamEnv is an agent that accepts streams from e.caller.
func streamEnv(t *testing.T, lim StreamLimits) (*env, *received) {
	rec := &received{}
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = rec.handler
		c.StreamLimits = lim
	}))
	return e, rec
}

func startBody(t testing.TB, id string, content []byte, chunk uint64) []byte {
	n := uint64(0)
	if len(content) > 0 {
		n = (uint64(len(content))-1)/chunk + 1
	}
	b, err := amp.Marshal(amp.StreamStartBody{StreamID: id, ContentType: "application/octet-stream", Filename: "f.bin",
		TotalSize: uint64(len(content)), TotalChunks: n, ChunkSize: chunk, HashAlgo: "sha256"})
	must(t, err)
	return b
}

func dataBody(t testing.TB, id string, i uint64, data []byte) []byte {
	b, err := amp.Marshal(amp.StreamDataBody{StreamID: id, Index: i, Data: data})
	must(t, err)
	return b
}

func endBody(t testing.TB, id string, content []byte) []byte {
	sum := sha256.Sum256(content)
	b, err := amp.Marshal(amp.StreamEndBody{StreamID: id, Hash: sum[:]})
	must(t, err)
	return b
}

// send seals and handles one message from e.caller; it returns the
// verified reply, or nil for none.
func (e *env) send(typ amp.Type, body []byte) *amp.Message {
	e.t.Helper()
	_, msg := e.seal(e.caller, typ, body)
	raw, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		e.t.Fatalf("handle: %v", err)
	}
	if raw == nil {
		return nil
	}
	return e.receive(e.caller, raw)
}

func wantStreamError(t *testing.T, m *amp.Message, code amp.Code, name string) {
	t.Helper()
	if m == nil {
		t.Fatalf("no reply, want ERROR %d %s", code, name)
	}
	eb := errorOf(t, m)
	var d map[string]any
	if len(eb.Details) > 0 {
		must(t, amp.Unmarshal(eb.Details, &d))
	}
	if id, ok := d["stream_id"]; ok && id == "" {
		t.Fatalf("empty stream_id in details %v", d)
	}
	if eb.Code != code || d["reason"] != name {
		t.Fatalf("error %d %v (%s), want %d %s", eb.Code, d, eb.Message, code, name)
	}
}

func chunks(content []byte, size int) [][]byte {
	var out [][]byte
	for len(content) > 0 {
		n := min(size, len(content))
		out = append(out, content[:n])
		content = content[n:]
	}
	return out
}

func wantAck(t *testing.T, m *amp.Message, id string, n uint64) {
	t.Helper()
	if m == nil || m.Type != amp.TypeAck {
		t.Fatalf("reply %v, want ACK", m)
	}
	b, err := amp.DecodeAck(m.Body)
	must(t, err)
	if b.StreamID != id || b.ChunksReceived == nil || *b.ChunksReceived != n || b.Verified == nil || !*b.Verified {
		t.Fatalf("ack %+v", b)
	}
}

// TestStreamOutOfOrderAndDuplicateChunks: chunks MAY arrive out of order
// and a duplicate chunk (re-sent with a new message id) is ignored (RFC
// 001 §6.2); the content is reassembled in index order.
func TestStreamOutOfOrderAndDuplicateChunks(t *testing.T) {
	e, rec := streamEnv(t, StreamLimits{})
	content := bytes.Repeat([]byte("0123456789"), 10)
	cs := chunks(content, 16)
	if m := e.send(amp.TypeStreamStart, startBody(t, "s", content, 16)); m != nil {
		t.Fatalf("STREAM_START answered %s", m.Type)
	}
	for _, i := range []int{6, 2, 0, 2, 1, 5, 3, 4, 0} {
		if m := e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), cs[i])); m != nil {
			t.Fatalf("chunk %d answered %s", i, m.Type)
		}
	}
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", 7)
	if !bytes.Equal(rec.got["s"], content) {
		t.Fatalf("reassembled %q", rec.got["s"])
	}
}

// TestStreamConflictingDuplicateChunkDiscardsStream: the same index with
// other bytes is an attack or a broken sender; the stream is discarded.
func TestStreamConflictingDuplicateChunkDiscardsStream(t *testing.T) {
	e, _ := streamEnv(t, StreamLimits{})
	content := []byte("abcdefgh")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 4))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, []byte("abcd")))
	wantStreamError(t, e.send(amp.TypeStreamData, dataBody(t, "s", 0, []byte("abcX"))), amp.CodeInvalidMessage, "conflicting_chunk")
	wantStreamError(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), amp.CodeInvalidMessage, "unknown_stream")
}

// TestStreamGapAtEndIsRefusedAndCanBeFilled: a STREAM_END with a chunk
// missing is an ERROR missing_chunks; the stream stays open, the sender
// sends the gap and a new STREAM_END, and gets the ACK.
func TestStreamGapAtEndIsRefusedAndCanBeFilled(t *testing.T) {
	e, rec := streamEnv(t, StreamLimits{})
	content := []byte("abcdefghij")
	cs := chunks(content, 4)
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 4))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, cs[0]))
	e.send(amp.TypeStreamData, dataBody(t, "s", 2, cs[2]))
	wantStreamError(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), amp.CodeInvalidMessage, "missing_chunks")
	if len(rec.info) != 0 {
		t.Fatal("incomplete stream handed to the application")
	}
	e.send(amp.TypeStreamData, dataBody(t, "s", 1, cs[1]))
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", 3)
}

// TestStreamBadChunksRefused: an index out of range or a chunk of the
// wrong size is refused, and a chunk for a stream never started too.
func TestStreamBadChunksRefused(t *testing.T) {
	e, _ := streamEnv(t, StreamLimits{})
	content := []byte("abcdefghij")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 4))
	for _, c := range []struct {
		body []byte
		name string
	}{
		{dataBody(t, "s", 3, []byte("ab")), "chunk_out_of_range"},
		{dataBody(t, "s", 1, []byte("abc")), "wrong_chunk_size"},
		{dataBody(t, "s", 2, []byte("abcd")), "wrong_chunk_size"},
		{dataBody(t, "other", 0, []byte("abcd")), "unknown_stream"},
	} {
		wantStreamError(t, e.send(amp.TypeStreamData, c.body), amp.CodeInvalidMessage, c.name)
	}
}

// TestStreamHashMismatchRejectsTransfer: RFC 001 §6.3 VERIFY, hash fail →
// ERROR; nothing is handed over and the stream is gone.
func TestStreamHashMismatchRejectsTransfer(t *testing.T) {
	e, rec := streamEnv(t, StreamLimits{})
	content := []byte("abcdefgh")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 8))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content))
	m := e.send(amp.TypeStreamEnd, endBody(t, "s", []byte("abcdefgX")))
	wantStreamError(t, m, amp.CodeInvalidMessage, "hash_mismatch")
	var d map[string]any
	must(t, amp.Unmarshal(errorOf(t, m).Details, &d))
	if d["stream_id"] != "s" || len(d) != 2 {
		t.Fatalf("details %v, want reason and stream_id (docs/SPEC-DECISIONS.md STREAM-4)", d)
	}
	if len(rec.info) != 0 || e.agent.OpenStreams() != 0 {
		t.Fatalf("hand-offs %d, open %d", len(rec.info), e.agent.OpenStreams())
	}
}

// TestTooManyStreamsPerSenderRetryable: beyond PerSender open streams a
// STREAM_START is refused retryably; once one finishes, a retry with the
// same message is accepted (the refusal was not recorded).
func TestTooManyStreamsPerSenderRetryable(t *testing.T) {
	e, _ := streamEnv(t, StreamLimits{PerSender: 2})
	content := []byte("ab")
	e.send(amp.TypeStreamStart, startBody(t, "s1", content, 2))
	e.send(amp.TypeStreamStart, startBody(t, "s2", content, 2))
	_, third := e.seal(e.caller, amp.TypeStreamStart, startBody(t, "s3", content, 2))
	raw, err := e.agent.Handle(context.Background(), third)
	must(t, err)
	m := e.receive(e.caller, raw)
	wantStreamError(t, m, amp.CodeOverloaded, "too_many_streams")
	if eb := errorOf(t, m); eb.Retry == nil || !*eb.Retry {
		t.Fatal("refusal is not retryable")
	}
	e.send(amp.TypeStreamData, dataBody(t, "s1", 0, content))
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s1", content)), "s1", 1)
	raw, err = e.agent.Handle(context.Background(), third)
	if err != nil || raw != nil {
		t.Fatalf("retried STREAM_START: %v, reply %x", err, raw)
	}
}

// TestStreamBytesBudgetExceeded: total_size of all open streams is capped;
// a stream larger than the whole budget is refused for good. (The shares
// within it: stream_budget_test.go.)
func TestStreamBytesBudgetExceeded(t *testing.T) {
	e, _ := streamEnv(t, StreamLimits{MaxBytes: 100, SenderBytes: 100})
	if m := e.send(amp.TypeStreamStart, startBody(t, "a", make([]byte, 60), 30)); m != nil {
		t.Fatalf("STREAM_START answered %s", m.Type)
	}
	wantStreamError(t, e.send(amp.TypeStreamStart, startBody(t, "b", make([]byte, 60), 30)), amp.CodeOverloaded, "stream_budget_exceeded")
	wantStreamError(t, e.send(amp.TypeStreamStart, startBody(t, "c", make([]byte, 101), 101)), amp.CodeInvalidMessage, "limit_exceeded")
}

// TestAbandonedSpooledStreamReclaimed: a stream over the spool threshold
// is written to a file in SpoolDir, not memory; left unfinished past its
// idle timeout it is reclaimed and its file removed, and later chunks are
// refused as unknown_stream.
func TestAbandonedSpooledStreamReclaimed(t *testing.T) {
	dir := t.TempDir()
	e, _ := streamEnv(t, StreamLimits{SpoolThreshold: 8, SpoolDir: dir, Idle: time.Minute})
	content := bytes.Repeat([]byte("x"), 32)
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 16))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content[:16]))
	files, _ := filepath.Glob(filepath.Join(dir, "ampstream-*"))
	if len(files) != 1 {
		t.Fatalf("spool files %v, want one", files)
	}
	e.clock.Add(30 * time.Second)
	if n := e.agent.ReclaimStreams(); n != 0 {
		t.Fatalf("reclaimed %d streams before the timeout", n)
	}
	e.clock.Add(61 * time.Second)
	if n := e.agent.ReclaimStreams(); n != 1 {
		t.Fatalf("reclaimed %d streams, want 1", n)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "ampstream-*")); len(files) != 0 {
		t.Fatalf("spool files left: %v", files)
	}
	wantStreamError(t, e.send(amp.TypeStreamData, dataBody(t, "s", 1, content[16:])), amp.CodeInvalidMessage, "unknown_stream")
}

// TestSpooledStreamHandedOffAndFileRemoved: a spooled stream reaches the
// application whole and its file is gone after the hand-off.
func TestSpooledStreamHandedOffAndFileRemoved(t *testing.T) {
	dir := t.TempDir()
	e, rec := streamEnv(t, StreamLimits{SpoolThreshold: 8, SpoolDir: dir})
	content := []byte("spooled content, more than eight bytes")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 10))
	for i, c := range chunks(content, 10) {
		e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
	}
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", 4)
	if !bytes.Equal(rec.got["s"], content) {
		t.Fatalf("got %q", rec.got["s"])
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "ampstream-*")); len(files) != 0 {
		t.Fatalf("spool files left: %v", files)
	}
}

// TestStreamRefusedByApplicationIsAnError: an application that does not
// accept the stream yields an ERROR, never an ACK.
func TestStreamRefusedByApplicationIsAnError(t *testing.T) {
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = func(context.Context, StreamInfo, io.Reader) error { return errors.New("disk full at /secret/path") }
	}))
	content := []byte("ab")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 2))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content))
	m := e.send(amp.TypeStreamEnd, endBody(t, "s", content))
	wantStreamError(t, m, amp.CodeInternalError, "stream_not_accepted")
	if contains(errorOf(t, m).Message, "secret") {
		t.Fatal("error echoes the application's error")
	}
}

// TestStreamHandlerPanicIsAnErrorAndRecorded: an application whose stream
// handler panics does not take the agent down; the sender gets 5001
// stream_not_accepted, and a retry of the same STREAM_END gets the same
// answer from the ledger without a second call.
func TestStreamHandlerPanicIsAnErrorAndRecorded(t *testing.T) {
	calls := 0
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = func(context.Context, StreamInfo, io.Reader) error { calls++; panic("application bug") }
	}))
	content := []byte("ab")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 2))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content))
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	for i := 0; i < 2; i++ {
		raw, err := e.agent.Handle(context.Background(), end)
		must(t, err)
		m := e.receive(e.caller, raw)
		wantStreamError(t, m, amp.CodeInternalError, "stream_not_accepted")
		if contains(errorOf(t, m).Message, "application bug") {
			t.Fatal("error echoes the panic")
		}
	}
	if calls != 1 {
		t.Fatalf("stream handler called %d times, want 1", calls)
	}
}

// TestStreamFromUnauthorizedCallerRefused: the policy applies to streams.
func TestStreamFromUnauthorizedCallerRefused(t *testing.T) {
	e, _ := streamEnv(t, StreamLimits{})
	_, msg := e.seal(e.stranger, amp.TypeStreamStart, startBody(t, "s", []byte("ab"), 2))
	raw, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if eb := errorOf(t, e.receive(e.stranger, raw)); eb.Code != amp.CodeUnauthorized {
		t.Fatalf("code %d", eb.Code)
	}
	if e.agent.OpenStreams() != 0 {
		t.Fatal("stream opened for an unauthorized caller")
	}
}

// TestStreamOverHTTPAndConcurrentChunks: over the HTTP binding the
// accepted STREAM_START and STREAM_DATA are 202 without a body and the
// STREAM_END gets the ACK; chunks posted concurrently (out of order, some
// twice) are all taken.
func TestStreamOverHTTPAndConcurrentChunks(t *testing.T) {
	e, rec := streamEnv(t, StreamLimits{SpoolThreshold: 64, SpoolDir: t.TempDir()})
	// Every chunk comes from this one host, at once: it may use every
	// request slot (as behind a proxy), not a peer's quarter.
	url, _ := serveHTTP(t, e, amphttp.Options{MaxBody: 1 << 20, MaxPeerInFlight: amphttp.DefaultMaxInFlight})
	post := func(typ amp.Type, body []byte) (int, []byte) {
		_, msg := e.seal(e.caller, typ, body)
		resp, err := http.Post(url+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(msg))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	content := bytes.Repeat([]byte("stream over http "), 40)
	cs := chunks(content, 32)
	if st, b := post(amp.TypeStreamStart, startBody(t, "h", content, 32)); st != http.StatusAccepted || len(b) != 0 {
		t.Fatalf("STREAM_START: %d %x", st, b)
	}
	var wg sync.WaitGroup
	for i := len(cs) - 1; i >= 0; i-- {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if st, b := post(amp.TypeStreamData, dataBody(t, "h", uint64(i), cs[i])); st != http.StatusAccepted || len(b) != 0 {
					t.Errorf("chunk %d: %d %x", i, st, b)
				}
			}()
		}
	}
	wg.Wait()
	st, b := post(amp.TypeStreamEnd, endBody(t, "h", content))
	if st != http.StatusOK {
		t.Fatalf("STREAM_END: %d", st)
	}
	wantAck(t, e.receive(e.caller, b), "h", uint64(len(cs)))
	if !bytes.Equal(rec.got["h"], content) {
		t.Fatal("content differs")
	}
}

// TestStreamCopiesCannotDeadlockTheCPUSlots: while the application reads a
// finished stream, a sender fills every CPU slot with fresh STREAM_DATA
// messages for that stream. They must wait for the stream without holding
// a slot; otherwise the STREAM_END could never take its slot back, and no
// message at all (not even an unauthenticated PING) would be answered again.
func TestStreamCopiesCannotDeadlockTheCPUSlots(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = func(ctx context.Context, info StreamInfo, r io.Reader) error {
			close(entered)
			<-release
			return nil
		}
	}))
	content := bytes.Repeat([]byte("x"), 32)
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 16))
	for i, c := range chunks(content, 16) {
		e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
	}
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	endDone := make(chan struct{})
	go func() { e.agent.Handle(context.Background(), end); close(endDone) }()
	<-entered
	slots := 2 * runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for i := 0; i < slots+2; i++ {
		_, dup := e.seal(e.caller, amp.TypeStreamData, dataBody(t, "s", 0, content[:16]))
		wg.Add(1)
		go func() { defer wg.Done(); e.agent.Handle(context.Background(), dup) }()
	}
	time.Sleep(200 * time.Millisecond) // let the copies reach the stream's lock
	close(release)
	select {
	case <-endDone:
	case <-time.After(10 * time.Second):
		// A deadlock is permanent: the test's cleanup (Agent.Close) and
		// a panic's cleanup would hang too, so end the binary, failing.
		fmt.Fprintf(os.Stderr, "--- FAIL: TestStreamCopiesCannotDeadlockTheCPUSlots: STREAM_END never finished: the %d CPU slots are held by copies waiting for its stream\n", slots)
		os.Exit(1)
	}
	wg.Wait()
	_, ping := e.seal(e.caller, amp.TypePing, nil)
	if _, err := e.agent.Handle(context.Background(), ping); err != nil {
		t.Fatal(err)
	}
}
