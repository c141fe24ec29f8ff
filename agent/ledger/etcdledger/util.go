package etcdledger

import (
	"encoding/hex"
	"errors"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func hexOf(b [16]byte) string { return hex.EncodeToString(b[:]) }

// errorsCause is the innermost error of err.
func errorsCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
