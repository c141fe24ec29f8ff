package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"io"
)

// The write-ahead log file (docs/FORMAT.md, "Idempotency ledger
// write-ahead log"):
//
//	file    = header key key-crc *group
//	header  = "ampbundle-ledger-wal/2\n"                    23 bytes
//	key     = 16 random bytes, the file's group key
//	key-crc = uint32 BE, CRC-32C of the 39 bytes before it
//	group   = length seq payload-crc header-crc tag payload
//	  length      uint32 BE, bytes of payload (>= 1 record)
//	  seq         uint64 BE, the previous group's seq + 1
//	  payload-crc uint32 BE, CRC-32C (Castagnoli) of payload
//	  header-crc  uint32 BE, CRC-32C of the 16 bytes before it
//	  tag         8 bytes, HMAC-SHA256(key, the 20 bytes before it)[:8]
//	payload = 1*record
//	record  = type expires sender-len sender id reply-len reply
//	  type        1 byte: 1 running, 2 done
//	  expires     int64 BE, Unix milliseconds
//	  sender-len  uint16 BE, >= 1
//	  sender      the sender's bare DID
//	  id          16 bytes, the message id
//	  reply-len   uint32 BE, 0 for running
//	  reply       the reply bytes (done)
//
// Version 1 files (no key, groups without a tag) are still read, and
// rewritten as version 2 when opened.
const (
	// WALFormatID is the first line of a write-ahead log ledger file.
	WALFormatID = "ampbundle-ledger-wal/2\n"
	// walFormatV1 is the first line of a version 1 file.
	walFormatV1 = "ampbundle-ledger-wal/1\n"

	walKeySize = 16
	// walFileHeader is the size of a file's header, key and key checksum.
	walFileHeader = len(WALFormatID) + walKeySize + 4
	walTagSize    = 8
	// walGroupHeader is the size of a group header (walGroupHeaderV1 in
	// a version 1 file).
	walGroupHeader   = 28
	walGroupHeaderV1 = 20
	walRecordFixed   = 1 + 8 + 2 + 16 + 4
	maxWALSender     = 1<<16 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walKeyCRC is the key checksum of a version 2 file header h (its first
// walFileHeader bytes): CRC-32C of the line and the key, the version 2 line
// whatever h's first line says.
func walKeyCRC(h []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte(WALFormatID))
	return crc32.Update(c, castagnoli, h[len(WALFormatID):walFileHeader-4])
}

// walHeaderChecks reports whether h's last 4 header bytes are its key
// checksum (walKeyCRC).
func walHeaderChecks(h []byte) bool {
	return walKeyCRC(h) == binary.BigEndian.Uint32(h[walFileHeader-4:walFileHeader])
}

// walFormat writes and checks the group headers of one file: version 2
// with the file's key (a tag keyed by it: bytes a caller had the agent
// write, inside a reply, can never pass for a group), or version 1
// without (key nil). Not safe for concurrent use: each file has one
// writer (the leader) and is read alone on open.
type walFormat struct {
	key []byte
	mac hash.Hash
	sum []byte
}

// newWALFormat returns the format of a version 2 file with key, or of a
// version 1 file when key is nil.
func newWALFormat(key []byte) *walFormat {
	f := &walFormat{key: key}
	if key != nil {
		f.mac = hmac.New(sha256.New, key)
		f.sum = make([]byte, 0, sha256.Size)
	}
	return f
}

// headerSize is the size of the file's group headers.
func (f *walFormat) headerSize() int {
	if f.key == nil {
		return walGroupHeaderV1
	}
	return walGroupHeader
}

// fileHeaderSize is the size of the file's header (and key).
func (f *walFormat) fileHeaderSize() int {
	if f.key == nil {
		return len(walFormatV1)
	}
	return walFileHeader
}

// tag computes the tag of a group header's first 20 bytes.
func (f *walFormat) tag(h []byte) []byte {
	f.mac.Reset()
	f.mac.Write(h[:20])
	f.sum = f.mac.Sum(f.sum[:0])
	return f.sum[:walTagSize]
}

// putGroupHeader fills the first headerSize bytes of g, whose payload
// follows them.
func (f *walFormat) putGroupHeader(g []byte, seq uint64) {
	payload := g[f.headerSize():]
	binary.BigEndian.PutUint32(g[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint64(g[4:12], seq)
	binary.BigEndian.PutUint32(g[12:16], crc32.Checksum(payload, castagnoli))
	binary.BigEndian.PutUint32(g[16:20], crc32.Checksum(g[:16], castagnoli))
	if f.key != nil {
		copy(g[20:walGroupHeader], f.tag(g))
	}
}

var (
	errWALHeader  = errors.New("group header checksum mismatch")
	errWALPayload = errors.New("group payload checksum mismatch")
	errWALRecord  = errors.New("malformed record")
	errWALTooMany = errors.New("more records in one group than the budget can account for")
	errWALSeq     = errors.New("group sequence")
)

// parseGroupHeader checks a group header and returns its payload length,
// sequence number and payload checksum.
func (f *walFormat) parseGroupHeader(h []byte) (n uint32, seq uint64, crc uint32, err error) {
	if len(h) < f.headerSize() {
		return 0, 0, 0, errWALHeader
	}
	// The length first: the writer's reserve of zeros is rejected without
	// a checksum at every byte; then the checksum, which random bytes
	// fail; then the tag, which only the file's writer can make.
	n = binary.BigEndian.Uint32(h[0:4])
	if n < walRecordFixed+1 {
		return 0, 0, 0, errWALHeader
	}
	if crc32.Checksum(h[:16], castagnoli) != binary.BigEndian.Uint32(h[16:20]) {
		return 0, 0, 0, errWALHeader
	}
	if f.key != nil && !hmac.Equal(f.tag(h), h[20:walGroupHeader]) {
		return 0, 0, 0, errWALHeader
	}
	return n, binary.BigEndian.Uint64(h[4:12]), binary.BigEndian.Uint32(h[12:16]), nil
}

// walRecord is one decoded record. Its reply, replyLen bytes at offset
// replyAt within the payload, is skipped by a walScanner (reply nil: the
// index reads replies back from the file); the tests' decoder of a whole
// payload sets reply to alias it.
type walRecord struct {
	typ     byte
	key     Key
	expires int64
	reply   []byte
	replyAt int64
	// replyLen is the length the record holds, up to 4 GiB - 1: an
	// int64, which an int of 32 bits (GOARCH=386, arm) would read as
	// negative from 2 GiB on, passing the open's check of a reply over
	// maxReply or one caller's share (docs/SPEC-DECISIONS.md AGENT-49).
	replyLen int64
}

// walRecordSize is the encoded size of a record.
func walRecordSize(sender string, reply int) int64 {
	return int64(walRecordFixed + len(sender) + reply)
}

// appendWALRecord appends one encoded record to b and returns b and the
// offset of the reply within it.
func appendWALRecord(b []byte, typ byte, k Key, expires int64, reply []byte) ([]byte, int) {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, uint64(expires))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Sender)))
	b = append(b, k.Sender...)
	b = append(b, k.ID[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(reply)))
	at := len(b)
	return append(b, reply...), at
}

// walScanner reads group payloads from a stream with buffers of a fixed
// size, whatever length a group header claims: a record's fixed part and
// sender are read into buf, its reply is checksummed and skipped (the
// index reads replies back from the file). What a payload costs in memory
// is its records' entries, each made of bytes actually read, so a header
// claiming gigabytes of a sparse or hostile file allocates nothing ahead
// (docs/SPEC-DECISIONS.md AGENT-20).
type walScanner struct {
	buf []byte
	// max, when positive, bounds the records of one payload: beyond it
	// the payload fails with errWALTooMany before more are kept.
	max int
}

// payload reads a payload of n bytes from r, checks it against crc and
// returns its records (replies nil), appended to out[:0].
func (sc *walScanner) payload(r io.Reader, n int64, crc uint32, out []walRecord) ([]walRecord, error) {
	h := crc32New()
	out, err := sc.records(r, n, h, out)
	if err != nil {
		return nil, err
	}
	if h.Sum32() != crc {
		return nil, errWALPayload
	}
	return out, nil
}

// records decodes n bytes of records from r, writing every byte read to h
// when h is not nil.
func (sc *walScanner) records(r io.Reader, n int64, h hash.Hash32, out []walRecord) ([]walRecord, error) {
	if sc.buf == nil {
		sc.buf = make([]byte, walRecordFixed+maxWALSender)
	}
	out = out[:0]
	left, at := n, int64(0)
	read := func(b []byte) error {
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		if h != nil {
			h.Write(b)
		}
		left -= int64(len(b))
		return nil
	}
	for left > 0 {
		if left < walRecordFixed {
			return nil, errWALRecord
		}
		b := sc.buf[:11]
		if err := read(b); err != nil {
			return nil, err
		}
		typ := b[0]
		slen := int(binary.BigEndian.Uint16(b[9:11]))
		if slen == 0 || left < int64(walRecordFixed-11+slen) {
			return nil, errWALRecord
		}
		rec := walRecord{typ: typ, expires: int64(binary.BigEndian.Uint64(b[1:9]))}
		b = sc.buf[11 : walRecordFixed+slen]
		if err := read(b); err != nil {
			return nil, err
		}
		rec.key.Sender = string(b[:slen])
		copy(rec.key.ID[:], b[slen:slen+16])
		rlen := int64(binary.BigEndian.Uint32(b[slen+16 : slen+20]))
		if rlen > left {
			return nil, errWALRecord
		}
		switch typ {
		case stateRunning:
			if rlen != 0 {
				return nil, errWALRecord
			}
		case stateDone:
		default:
			return nil, errWALRecord
		}
		rec.replyAt, rec.replyLen = at+int64(walRecordFixed+slen), rlen
		for skip := rlen; skip > 0; {
			chunk := sc.buf[:min(skip, int64(len(sc.buf)))]
			if err := read(chunk); err != nil {
				return nil, err
			}
			skip -= int64(len(chunk))
		}
		if sc.max > 0 && len(out) >= sc.max {
			return nil, errWALTooMany
		}
		out = append(out, rec)
		at += int64(walRecordFixed+slen) + rlen
	}
	if len(out) == 0 {
		return nil, errWALRecord
	}
	return out, nil
}

// crc32New is a running CRC-32C (the payload checksum).
func crc32New() hash.Hash32 { return crc32.New(castagnoli) }
