package amp

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBodyShapes(t *testing.T) {
	type decoder func([]byte) error
	wrap := func(f any) decoder {
		switch g := f.(type) {
		case func([]byte) (AckBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (ErrorBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (HelloBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (HelloAckBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (DocSendBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (DocRequestBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (StreamStartBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (StreamDataBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (StreamEndBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		case func([]byte) (BatchBody, error):
			return func(b []byte) error { _, err := g(b); return err }
		}
		panic("unknown decoder")
	}
	data := []byte("hello")
	sum := sha256.Sum256(data)
	tests := []struct {
		name string
		dec  decoder
		body any
		err  ErrName // "" = valid
	}{
		{"ack", wrap(DecodeAck), map[string]any{"ack_source": "recipient", "received_at": 1}, ""},
		{"ack with an unknown extra field", wrap(DecodeAck), map[string]any{"ack_source": "relay", "received_at": 1, "future": true}, ""},
		{"ack without received_at", wrap(DecodeAck), map[string]any{"ack_source": "recipient"}, "missing_field"},
		{"ack with another source", wrap(DecodeAck), map[string]any{"ack_source": "friend", "received_at": 1}, "wrong_shape"},
		{"ack with a text received_at", wrap(DecodeAck), map[string]any{"ack_source": "relay", "received_at": "now"}, "wrong_shape"},
		{"ack that is not a map", wrap(DecodeAck), []any{1}, "wrong_shape"},
		{"error", wrap(DecodeError), map[string]any{"code": 4001, "category": "client", "message": "m", "details": map[string]any{"field": "version"}, "retry": false}, ""},
		{"error without message", wrap(DecodeError), map[string]any{"code": 4001, "category": "client"}, "missing_field"},
		{"error code too large", wrap(DecodeError), map[string]any{"code": 1 << 20, "category": "client", "message": "m"}, "wrong_shape"},
		{"hello", wrap(DecodeHello), map[string]any{"versions": []any{"1.0"}}, ""},
		{"hello without versions", wrap(DecodeHello), map[string]any{"extensions": []any{}}, "missing_field"},
		{"hello with empty versions", wrap(DecodeHello), map[string]any{"versions": []any{}}, "wrong_shape"},
		{"hello with agent_info lacking name", wrap(DecodeHello), map[string]any{"versions": []any{"1.0"}, "agent_info": map[string]any{"implementation": "x"}}, "missing_field"},
		{"hello_ack", wrap(DecodeHelloAck), map[string]any{"selected": "1.0"}, ""},
		{"doc_send", wrap(DecodeDocSend), map[string]any{"content_type": "text/plain", "filename": "h", "size": 5, "hash": sum[:], "data": data}, ""},
		{"doc_send size mismatch", wrap(DecodeDocSend), map[string]any{"content_type": "text/plain", "filename": "h", "size": 6, "hash": sum[:], "data": data}, "size_mismatch"},
		{"doc_send hash mismatch", wrap(DecodeDocSend), map[string]any{"content_type": "text/plain", "filename": "h", "size": 5, "hash": make([]byte, 32), "data": data}, "hash_mismatch"},
		{"doc_request by hash", wrap(DecodeDocRequest), map[string]any{"hash": sum[:]}, ""},
		{"doc_request naming nothing", wrap(DecodeDocRequest), map[string]any{"accept": "text/plain"}, "missing_field"},
		{"stream_start", wrap(DecodeStreamStart), map[string]any{"stream_id": "s", "content_type": "t", "filename": "f", "total_size": 5, "total_chunks": 1, "chunk_size": 5, "hash_algo": "sha256"}, ""},
		{"stream_start missing chunk_size", wrap(DecodeStreamStart), map[string]any{"stream_id": "s", "content_type": "t", "filename": "f", "total_size": 5, "total_chunks": 1, "hash_algo": "sha256"}, "missing_field"},
		{"stream_data with text data", wrap(DecodeStreamData), map[string]any{"stream_id": "s", "index": 0, "data": "hello"}, "wrong_shape"},
		{"stream_end", wrap(DecodeStreamEnd), map[string]any{"stream_id": "s", "hash": sum[:]}, ""},
		{"batch", wrap(DecodeBatch), map[string]any{"items": []any{[]byte{1}}}, ""},
		{"batch without items", wrap(DecodeBatch), map[string]any{"items": []any{}}, "wrong_shape"},
		{"batch with a text item", wrap(DecodeBatch), map[string]any{"items": []any{"x"}}, "wrong_shape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dec(mustMarshal(t, tt.body))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.err) || !errors.Is(err, CodeInvalidMessage) {
				t.Fatalf("got %v, want 1001 %s", err, tt.err)
			}
		})
	}
	// Bytes that are not CBOR at all are 1001 too.
	if _, err := DecodeAck([]byte{0x1c}); !errors.Is(err, CodeInvalidMessage) {
		t.Fatalf("garbage ack: %v", err)
	}
}

func TestSelectVersion(t *testing.T) {
	tests := []struct {
		versions  []string
		supported []uint64
		want      string
	}{
		{[]string{"1.0", "2.0"}, []uint64{1}, "1.0"},       // RFC 001 A.3
		{[]string{"2.0", "1.0"}, []uint64{1, 2}, "2.0"},    // initiator's preference first
		{[]string{"2.1.3", "1.0"}, []uint64{2}, "2.1.3"},   // major of x.y.z
		{[]string{"x", "01.0", "1.0"}, []uint64{1}, "1.0"}, // not versions are skipped
		{[]string{"3.0"}, []uint64{1}, ""},                 // none → HELLO_REJECT
		{[]string{"1"}, []uint64{1}, "1"},
	}
	for _, tt := range tests {
		got, ok := SelectVersion(HelloBody{Versions: tt.versions}, tt.supported)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%v with %v: got %q %v, want %q", tt.versions, tt.supported, got, ok, tt.want)
		}
	}
}

func TestCheckAck(t *testing.T) {
	alice, bob, carol, relay := "did:web:alice.example", "did:web:bob.example", "did:web:carol.example", "did:web:relay.example"
	ack := func(from, source, target string) *Message {
		b := AckBody{AckSource: source, ReceivedAt: 1, AckTarget: target}
		return &Message{Type: TypeAck, From: from, Body: mustMarshal(t, b)}
	}
	to := ToList(bob, carol)
	tests := []struct {
		name string
		m    *Message
		err  ErrName
	}{
		{"recipient ack from a recipient", ack(bob+"#k1", AckFromRecipient, bob), ""},
		{"recipient ack from a non-recipient", ack(alice, AckFromRecipient, ""), "ack_not_from_recipient"},
		{"relay ack from a trusted relay", ack(relay, AckFromRelay, carol), ""},
		{"relay ack from an untrusted did (N5)", ack(bob, AckFromRelay, ""), "untrusted_relay_ack"},
		{"ack_target not a recipient", ack(bob, AckFromRecipient, alice), "wrong_ack_target"},
		{"not an ack", &Message{Type: TypePing, From: bob, Body: []byte{0xf6}}, "wrong_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckAck(tt.m, to, []string{relay})
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.err) || !errors.Is(err, CodeInvalidMessage) {
				t.Fatalf("got %v, want 1001 %s", err, tt.err)
			}
		})
	}
}

func TestReassembler(t *testing.T) {
	payload := []byte("abcdefghijk") // 11 bytes in chunks of 4: 4+4+3
	sum := sha256.Sum256(payload)
	start := StreamStartBody{StreamID: "s1", ContentType: "text/plain", Filename: "f", TotalSize: 11, TotalChunks: 3, ChunkSize: 4, HashAlgo: "sha256"}
	chunk := func(i uint64) StreamDataBody {
		end := (i + 1) * 4
		if end > 11 {
			end = 11
		}
		return StreamDataBody{StreamID: "s1", Index: i, Data: payload[i*4 : end]}
	}
	t.Run("out of order with a duplicate", func(t *testing.T) {
		r, err := NewReassembler(start, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []uint64{2, 0, 0, 1} {
			if err := r.Add(chunk(i)); err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
		}
		got, err := r.Finish(StreamEndBody{StreamID: "s1", Hash: sum[:]})
		if err != nil || string(got) != string(payload) {
			t.Fatalf("got %q %v", got, err)
		}
		if err := r.Add(chunk(0)); !errors.Is(err, ErrName("stream_closed")) {
			t.Fatalf("add after finish: %v", err)
		}
	})
	refusals := []struct {
		name string
		run  func(r *Reassembler) error
		err  ErrName
	}{
		{"missing chunk", func(r *Reassembler) error {
			r.Add(chunk(0))
			r.Add(chunk(2))
			_, err := r.Finish(StreamEndBody{StreamID: "s1", Hash: sum[:]})
			return err
		}, "missing_chunks"},
		{"hash mismatch", func(r *Reassembler) error {
			for i := uint64(0); i < 3; i++ {
				r.Add(chunk(i))
			}
			_, err := r.Finish(StreamEndBody{StreamID: "s1", Hash: make([]byte, 32)})
			return err
		}, "hash_mismatch"},
		{"index out of range", func(r *Reassembler) error { return r.Add(StreamDataBody{StreamID: "s1", Index: 3, Data: []byte("x")}) }, "chunk_out_of_range"},
		{"wrong chunk size", func(r *Reassembler) error {
			return r.Add(StreamDataBody{StreamID: "s1", Index: 0, Data: []byte("abc")})
		}, "wrong_chunk_size"},
		{"conflicting duplicate", func(r *Reassembler) error {
			r.Add(chunk(0))
			return r.Add(StreamDataBody{StreamID: "s1", Index: 0, Data: []byte("zzzz")})
		}, "conflicting_chunk"},
		{"another stream", func(r *Reassembler) error { c := chunk(0); c.StreamID = "s2"; return r.Add(c) }, "wrong_stream"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReassembler(start, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.run(r); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %s", err, tt.err)
			}
		})
	}
	starts := []struct {
		name string
		mod  func(*StreamStartBody)
		err  ErrName
	}{
		{"over the cap", func(s *StreamStartBody) { s.TotalSize = 1 << 40; s.ChunkSize = 1 << 38; s.TotalChunks = 4 }, "limit_exceeded"},
		{"too many chunks", func(s *StreamStartBody) { s.TotalChunks = 4 }, "wrong_shape"},
		{"too few chunks", func(s *StreamStartBody) { s.TotalChunks = 2 }, "wrong_shape"},
		{"zero chunk size", func(s *StreamStartBody) { s.ChunkSize = 0 }, "wrong_shape"},
		{"other hash", func(s *StreamStartBody) { s.HashAlgo = "md5" }, "unsupported_hash"},
		{"empty id", func(s *StreamStartBody) { s.StreamID = "" }, "wrong_shape"},
	}
	for _, tt := range starts {
		t.Run("start "+tt.name, func(t *testing.T) {
			s := start
			tt.mod(&s)
			if _, err := NewReassembler(s, 1<<20); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %s", err, tt.err)
			}
		})
	}
}

// TestRFC001A5StreamReassembly runs the A.5 vector's three messages through
// Receive and the Reassembler.
func TestRFC001A5StreamReassembly(t *testing.T) {
	env := loadVectorEnv(t)
	vectors := loadVectors(t)
	r := env.receiver(t, "bob", 1707055203000+1000)
	var body [3][]byte
	for i, name := range []string{"a5-stream-start", "a5-stream-data", "a5-stream-end"} {
		m, err := r.Receive(context.Background(), mustHex(t, vectors[name].Output.Message))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body[i] = m.Body
	}
	start, err := DecodeStreamStart(body[0])
	if err != nil {
		t.Fatal(err)
	}
	ra, err := NewReassembler(start, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data, err := DecodeStreamData(body[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := ra.Add(data); err != nil {
		t.Fatal(err)
	}
	end, err := DecodeStreamEnd(body[2])
	if err != nil {
		t.Fatal(err)
	}
	got, err := ra.Finish(end)
	if err != nil || string(got) != "hello" {
		t.Fatalf("reassembled %q %v", got, err)
	}
}

func TestReceiveBatch(t *testing.T) {
	f := newFixture(t)
	good := f.seal(t, Draft{Body: mustMarshal(t, "one")})
	bad := edit(t, f.seal(t, Draft{Body: mustMarshal(t, "two")}), flipSig)
	inner := f.seal(t, Draft{Type: TypeBatch, Body: mustMarshal(t, BatchBody{Items: [][]byte{good}})})
	container := f.seal(t, Draft{Type: TypeBatch, Body: mustMarshal(t, BatchBody{Items: [][]byte{good, bad, []byte{0xff}, inner}})})
	m, err := f.recv.Receive(context.Background(), container)
	if err != nil {
		t.Fatal(err)
	}
	items, err := f.recv.ReceiveBatch(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	want := []ErrName{"", "invalid_signature", "invalid_message", "nested_batch"}
	if len(items) != len(want) {
		t.Fatalf("%d items", len(items))
	}
	for i, it := range items {
		if want[i] == "" {
			if it.Err != nil || it.Message == nil {
				t.Fatalf("item %d: %v", i, it.Err)
			}
			continue
		}
		if !errors.Is(it.Err, want[i]) {
			t.Fatalf("item %d: got %v, want %s", i, it.Err, want[i])
		}
		eb := it.ErrorBody()
		if eb.BatchIndex == nil || *eb.BatchIndex != uint64(i) {
			t.Fatalf("item %d: error body without batch_index", i)
		}
	}
	if _, err := f.recv.ReceiveBatch(context.Background(), &Message{Type: TypeMessage}); err == nil {
		t.Fatal("non-batch container accepted")
	}
}

func TestErrorType(t *testing.T) {
	e := Named(CodeUnavailable, "hash_mismatch", "schema bytes do not match their hash").WithCause(fmt.Errorf("disk"))
	wrapped := fmt.Errorf("resolving: %w", e)
	if !errors.Is(wrapped, CodeUnavailable) || !errors.Is(wrapped, ErrName("hash_mismatch")) {
		t.Fatal("errors.Is does not see the code and name through wrapping")
	}
	if errors.Is(wrapped, CodeInternalError) || errors.Is(wrapped, ErrName("other")) {
		t.Fatal("errors.Is matches another code or name")
	}
	if !errors.Is(wrapped, &Error{Code: CodeUnavailable}) || errors.Is(wrapped, &Error{Code: CodeUnavailable, Name: "missing"}) {
		t.Fatal("errors.Is with an *Error target")
	}
	var got *Error
	if !errors.As(wrapped, &got) || got.Code != 5002 {
		t.Fatal("errors.As")
	}
	if CodeOf(errors.New("boom")) != CodeInternalError || SafeMessage(errors.New("secret path /etc/x")) != "internal error" {
		t.Fatal("foreign errors must become a generic 5001")
	}
	b := ErrorBodyOf(e)
	if b.Code != 5002 || b.Category != "server" || b.Retry == nil || !*b.Retry || strings.Contains(b.Message, "disk") {
		t.Fatalf("error body %+v", b)
	}
	if CodeOf(nil) != 0 || AsError(nil) != nil {
		t.Fatal("nil")
	}
}

// TestCodeRegistry checks the codes against RFC 001 §15.3 row by row.
func TestCodeRegistry(t *testing.T) {
	rows := []struct {
		code  Code
		name  string
		cat   string
		retry bool
	}{
		{1001, "INVALID_MESSAGE", "protocol", false}, {1002, "INVALID_SIGNATURE", "protocol", false},
		{1003, "INVALID_TIMESTAMP", "protocol", false}, {1004, "UNSUPPORTED_VERSION", "protocol", false},
		{1005, "UNKNOWN_TYPE", "protocol", false}, {2001, "RECIPIENT_NOT_FOUND", "routing", true},
		{2002, "ENDPOINT_UNREACHABLE", "routing", true}, {2003, "RELAY_REJECTED", "routing", true},
		{2004, "TTL_EXPIRED", "routing", false}, {3001, "UNAUTHORIZED", "security", false},
		{3002, "CONTACT_REQUIRED", "security", false}, {3003, "CONTACT_DENIED", "security", false},
		{3004, "DELEGATION_INVALID", "security", false}, {3005, "RATE_LIMITED", "security", true},
		{4001, "BAD_REQUEST", "client", false}, {4002, "CAPABILITY_NOT_FOUND", "client", false},
		{4003, "VERSION_MISMATCH", "client", false}, {4004, "SCHEMA_VIOLATION", "client", false},
		{5001, "INTERNAL_ERROR", "server", true}, {5002, "UNAVAILABLE", "server", true},
		{5003, "TIMEOUT", "server", true}, {5004, "OVERLOADED", "server", true},
	}
	if len(Codes()) != len(rows) {
		t.Fatalf("%d codes registered, RFC 001 §15.3 has %d", len(Codes()), len(rows))
	}
	for _, r := range rows {
		if r.code.Name() != r.name || r.code.Category() != r.cat || r.code.Retryable() != r.retry || !r.code.Known() {
			t.Errorf("%d: %s %s %v", r.code, r.code.Name(), r.code.Category(), r.code.Retryable())
		}
	}
	if Code(4901).Known() || Code(4901).Name() != "CODE_4901" || Code(4901).Retryable() || !Code(5901).Retryable() {
		t.Error("vendor codes")
	}
	// Every registered type code of RFC 001 §4.3.
	if n := len(Types()); n != 40 {
		t.Fatalf("%d type codes registered, want 40 (RFC 001 §4.3)", n)
	}
	for _, tc := range []struct {
		t    Type
		name string
	}{{0x01, "PING"}, {0x0f, "ERROR"}, {0x16, "BATCH"}, {0x22, "CAP_INVOKE"}, {0x72, "HELLO_REJECT"}, {0xf0, "EXTENSION"}} {
		if tc.t.Name() != tc.name {
			t.Errorf("type %x: %s", uint64(tc.t), tc.t.Name())
		}
	}
	for _, unknown := range []Type{0x00, 0x0c, 0x0e, 0x17, 0x24, 0x99, 0xf1, 0x100} {
		if unknown.Known() {
			t.Errorf("type %x should be unknown", uint64(unknown))
		}
	}
}
