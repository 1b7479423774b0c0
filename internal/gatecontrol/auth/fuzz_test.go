package auth_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/google/go-cmp/cmp"
)

// FuzzParseHeader checks that ParseHeader never panics, that everything
// it accepts it accepts in one spelling only (String gives back the
// input), and that it refuses with ErrMalformed.
func FuzzParseHeader(f *testing.F) {
	f.Add(goodHdr)
	f.Add("")
	f.Add("CODEGENIE-HMAC-SHA256 keyid=k1,ts=0,nonce=,sig=")
	f.Add("CODEGENIE-HMAC-SHA256 keyid=,ts=01,nonce=" + nonceHex + ",sig=" + sigHex + ",x=1")
	f.Add("CODEGENIE-HMAC-SHA256 keyid=k,ts=9223372036854775808,nonce=" + nonceHex + ",sig=" + sigHex)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := auth.ParseHeader(s)
		if err != nil {
			if !errors.Is(err, auth.ErrMalformed) {
				t.Fatalf("ParseHeader(%q): %v does not match ErrMalformed", s, err)
			}
			return
		}
		if got := h.String(); got != s {
			t.Fatalf("ParseHeader(%q).String() = %q", s, got)
		}
		again, err := auth.ParseHeader(h.String())
		if err != nil {
			t.Fatalf("reparsing %q: %v", h.String(), err)
		}
		if diff := cmp.Diff(h, again); diff != "" {
			t.Fatalf("reparsed header (-want +got):\n%s", diff)
		}
	})
}

var validKeyID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// FuzzHeaderRoundTrip builds headers from parts and checks that every
// valid one survives String and ParseHeader unchanged.
func FuzzHeaderRoundTrip(f *testing.F) {
	f.Add("k1", int64(1700000000), []byte("0123456789abcdef"), []byte("0123456789abcdef0123456789abcdef"))
	f.Add("a.b_c-D", int64(0), []byte{}, []byte{0xff})
	f.Fuzz(func(t *testing.T, keyID string, ts int64, nonce, sig []byte) {
		h := auth.Header{KeyID: keyID, Timestamp: ts}
		copy(h.Nonce[:], nonce)
		copy(h.Signature[:], sig)
		got, err := auth.ParseHeader(h.String())
		valid := ts >= 0 && validKeyID.MatchString(keyID)
		if valid != (err == nil) {
			t.Fatalf("ParseHeader(%q): %v, want valid=%v", h.String(), err, valid)
		}
		if valid {
			if diff := cmp.Diff(h, got); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		}
	})
}
