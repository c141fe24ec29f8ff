package transport

import (
	"errors"
	"net"
	"testing"
)

// TestPlainDialToAResolvedRemoteAddressIsRefused: a plain connection
// allowed because its host name looks local ("localhost", or a name the
// resolver or a hosts file maps) must still reach a loopback address: the
// dialer's Control hook sees the address actually dialed, and refuses
// every other one, IPv4-mapped and zoned forms included.
func TestPlainDialToAResolvedRemoteAddressIsRefused(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "127.8.9.10:8080": true, "[::1]:80": true, "[::ffff:127.0.0.1]:80": true,
		"10.0.0.5:80": false, "192.0.2.1:443": false, "[2001:db8::1]:80": false,
		"[::ffff:10.0.0.5]:80": false, "[fe80::1%eth0]:80": false, "0.0.0.0:80": false,
		"[::]:80": false, "localhost:80": false, "": false,
	} {
		err := LoopbackOnly("tcp", addr, nil)
		if ok != (err == nil) {
			t.Errorf("%q: %v, want allowed %v", addr, err, ok)
		}
		var nl *NotLoopbackError
		if err != nil && !errors.As(err, &nl) {
			t.Errorf("%q: %v is not a NotLoopbackError", addr, err)
		}
	}
	// Wired into a dialer, it refuses before connecting.
	d := net.Dialer{Control: LoopbackOnly}
	if c, err := d.Dial("tcp", "192.0.2.1:9"); err == nil {
		c.Close()
		t.Fatal("a dialer with LoopbackOnly connected to 192.0.2.1")
	} else if !errors.As(err, new(*NotLoopbackError)) {
		t.Errorf("dial of 192.0.2.1: %v, want a NotLoopbackError", err)
	}
}
