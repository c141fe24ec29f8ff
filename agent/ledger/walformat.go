package ledger

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// The write-ahead log file (docs/FORMAT.md, "Idempotency ledger
// write-ahead log"):
//
//	file    = header *group
//	header  = "ampbundle-ledger-wal/1\n"                    23 bytes
//	group   = length seq payload-crc header-crc payload
//	  length      uint32 BE, bytes of payload (>= 1 record)
//	  seq         uint64 BE, the previous group's seq + 1
//	  payload-crc uint32 BE, CRC-32C (Castagnoli) of payload
//	  header-crc  uint32 BE, CRC-32C of the 16 bytes before it
//	payload = 1*record
//	record  = type expires sender-len sender id reply-len reply
//	  type        1 byte: 1 running, 2 done
//	  expires     int64 BE, Unix milliseconds
//	  sender-len  uint16 BE, >= 1
//	  sender      the sender's bare DID
//	  id          16 bytes, the message id
//	  reply-len   uint32 BE, 0 for running
//	  reply       the reply bytes (done)
const (
	// WALFormatID is the first line of a write-ahead log ledger file.
	WALFormatID = "ampbundle-ledger-wal/1\n"

	walGroupHeader = 20
	walRecordFixed = 1 + 8 + 2 + 16 + 4
	maxWALSender   = 1<<16 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walRecord is one decoded record; reply aliases the payload it was read
// from, at offset replyAt within it.
type walRecord struct {
	typ     byte
	key     Key
	expires int64
	reply   []byte
	replyAt int
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

// putWALGroupHeader fills the first walGroupHeader bytes of g, whose
// payload follows them.
func putWALGroupHeader(g []byte, seq uint64) {
	payload := g[walGroupHeader:]
	binary.BigEndian.PutUint32(g[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint64(g[4:12], seq)
	binary.BigEndian.PutUint32(g[12:16], crc32.Checksum(payload, castagnoli))
	binary.BigEndian.PutUint32(g[16:20], crc32.Checksum(g[:16], castagnoli))
}

var (
	errWALHeader  = errors.New("group header checksum mismatch")
	errWALPayload = errors.New("group payload checksum mismatch")
	errWALRecord  = errors.New("malformed record")
)

// parseWALGroupHeader checks a group header and returns its payload length,
// sequence number and payload checksum.
func parseWALGroupHeader(h []byte) (n uint32, seq uint64, crc uint32, err error) {
	if len(h) < walGroupHeader {
		return 0, 0, 0, errWALHeader
	}
	// The length first: the writer's reserve of zeros is rejected without
	// a checksum at every byte.
	n = binary.BigEndian.Uint32(h[0:4])
	if n < walRecordFixed+1 {
		return 0, 0, 0, errWALHeader
	}
	if crc32.Checksum(h[:16], castagnoli) != binary.BigEndian.Uint32(h[16:20]) {
		return 0, 0, 0, errWALHeader
	}
	return n, binary.BigEndian.Uint64(h[4:12]), binary.BigEndian.Uint32(h[12:16]), nil
}

// parseWALPayload checks a group payload against its checksum and decodes
// its records. Nothing is accepted that does not re-encode to the same
// bytes.
func parseWALPayload(p []byte, crc uint32) ([]walRecord, error) {
	if crc32.Checksum(p, castagnoli) != crc {
		return nil, errWALPayload
	}
	return parseWALRecords(p)
}

// parseWALRecords decodes a payload of one or more records.
func parseWALRecords(p []byte) ([]walRecord, error) {
	var out []walRecord
	for at := 0; at < len(p); {
		rest := p[at:]
		if len(rest) < walRecordFixed {
			return nil, errWALRecord
		}
		typ := rest[0]
		slen := int(binary.BigEndian.Uint16(rest[9:11]))
		if slen == 0 || len(rest) < walRecordFixed+slen {
			return nil, errWALRecord
		}
		r := walRecord{typ: typ, expires: int64(binary.BigEndian.Uint64(rest[1:9]))}
		r.key.Sender = string(rest[11 : 11+slen])
		copy(r.key.ID[:], rest[11+slen:27+slen])
		rlen := binary.BigEndian.Uint32(rest[27+slen : 31+slen])
		if uint64(rlen) > uint64(len(rest)-walRecordFixed-slen) {
			return nil, errWALRecord
		}
		switch typ {
		case stateRunning:
			if rlen != 0 {
				return nil, errWALRecord
			}
		case stateDone:
			r.reply = rest[walRecordFixed+slen : walRecordFixed+slen+int(rlen)]
			r.replyAt = at + walRecordFixed + slen
		default:
			return nil, errWALRecord
		}
		out = append(out, r)
		at += walRecordFixed + slen + int(rlen)
	}
	if len(out) == 0 {
		return nil, errWALRecord
	}
	return out, nil
}
