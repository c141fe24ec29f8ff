package ledger

import (
	"bytes"
	"hash/crc32"
)

// The decoders of a whole payload held in memory, which only the tests
// use: the log itself is read by a walScanner, whatever length a group
// header claims (docs/SPEC-DECISIONS.md AGENT-20).

// parseWALPayload checks a group payload against its checksum and decodes
// its records. Nothing is accepted that does not re-encode to the same
// bytes.
func parseWALPayload(p []byte, crc uint32) ([]walRecord, error) {
	if crc32.Checksum(p, castagnoli) != crc {
		return nil, errWALPayload
	}
	return parseWALRecords(p)
}

// parseWALRecords decodes a payload of one or more records (walScanner's
// rules), their replies aliasing p.
func parseWALRecords(p []byte) ([]walRecord, error) {
	var sc walScanner
	out, err := sc.records(bytes.NewReader(p), int64(len(p)), nil, nil)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].reply = p[out[i].replyAt : out[i].replyAt+out[i].replyLen]
	}
	return out, nil
}
