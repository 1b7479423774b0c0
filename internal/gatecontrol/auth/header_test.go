package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/google/go-cmp/cmp"
)

const (
	nonceHex = "000102030405060708090a0b0c0d0e0f"
	sigHex   = "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f"
	goodHdr  = "CODEGENIE-HMAC-SHA256 keyid=k1,ts=1700000000,nonce=" + nonceHex + ",sig=" + sigHex
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	want := auth.Header{
		KeyID:     "k1",
		Timestamp: 1700000000,
		Nonce:     [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		Signature: [32]byte{
			0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
			0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
		},
	}
	got, err := auth.ParseHeader(goodHdr)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseHeader (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(goodHdr, got.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
}

func TestParseHeaderValid(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		goodHdr,
		strings.Replace(goodHdr, "keyid=k1", "keyid=A-z_0.9", 1),
		strings.Replace(goodHdr, "keyid=k1", "keyid="+strings.Repeat("k", 64), 1),
		strings.Replace(goodHdr, "ts=1700000000", "ts=0", 1),
		strings.Replace(goodHdr, "ts=1700000000", "ts=9223372036854775807", 1),
	} {
		h, err := auth.ParseHeader(s)
		if err != nil {
			t.Errorf("ParseHeader(%q): %v", s, err)
			continue
		}
		if diff := cmp.Diff(s, h.String()); diff != "" {
			t.Errorf("String (-want +got):\n%s", diff)
		}
	}
}

func TestParseHeaderMalformed(t *testing.T) {
	t.Parallel()
	rep := func(old, new string) string { return strings.Replace(goodHdr, old, new, 1) }
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"scheme only", "CODEGENIE-HMAC-SHA256"},
		{"scheme and space", "CODEGENIE-HMAC-SHA256 "},
		{"lowercase scheme", strings.ToLower(goodHdr[:21]) + goodHdr[21:]},
		{"other scheme", rep("CODEGENIE-HMAC-SHA256", "CODEGENIE-HMAC-SHA1")},
		{"two spaces", rep(" ", "  ")},
		{"tab", rep(" ", "\t")},
		{"space after comma", rep(",ts", ", ts")},
		{"leading space", " " + goodHdr},
		{"trailing space", goodHdr + " "},
		{"trailing comma", goodHdr + ","},
		{"trailing newline", goodHdr + "\n"},
		{"extra parameter", goodHdr + ",x=1"},
		{"missing sig", goodHdr[:strings.Index(goodHdr, ",sig=")]},
		{"reordered", "CODEGENIE-HMAC-SHA256 ts=1700000000,keyid=k1,nonce=" + nonceHex + ",sig=" + sigHex},
		{"duplicate keyid", rep("ts=1700000000", "keyid=k2")},
		{"uppercase parameter", rep("keyid=", "KEYID=")},
		{"quoted keyid", rep("keyid=k1", `keyid="k1"`)},
		{"empty keyid", rep("keyid=k1", "keyid=")},
		{"keyid with space", rep("keyid=k1", "keyid=k 1")},
		{"keyid with equals", rep("keyid=k1", "keyid=k=1")},
		{"keyid too long", rep("keyid=k1", "keyid="+strings.Repeat("k", 65))},
		{"keyid non-ascii", rep("keyid=k1", "keyid=kü")},
		{"empty ts", rep("ts=1700000000", "ts=")},
		{"negative ts", rep("ts=1700000000", "ts=-1700000000")},
		{"plus ts", rep("ts=1700000000", "ts=+1700000000")},
		{"leading zero ts", rep("ts=1700000000", "ts=01700000000")},
		{"fractional ts", rep("ts=1700000000", "ts=1700000000.5")},
		{"ts overflow", rep("ts=1700000000", "ts=9223372036854775808")},
		{"hex ts", rep("ts=1700000000", "ts=0x10")},
		{"uppercase nonce", rep(nonceHex, strings.ToUpper(nonceHex))},
		{"short nonce", rep(nonceHex, nonceHex[2:])},
		{"long nonce", rep(nonceHex, nonceHex+"00")},
		{"odd nonce", rep(nonceHex, nonceHex[1:])},
		{"non-hex nonce", rep(nonceHex, "g"+nonceHex[1:])},
		{"uppercase sig", rep(sigHex, strings.ToUpper(sigHex))},
		{"short sig", rep(sigHex, sigHex[:62])},
		{"base64 sig", rep(sigHex, "8OHSw7SlloeIaVpLPC0eD/Dh0sO0pZaHiGlaSzwtHg8=")},
		{"huge", goodHdr + strings.Repeat("a", 1<<20)},
		{"nul", rep("k1", "k\x001")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := auth.ParseHeader(tt.in)
			if !errors.Is(err, auth.ErrMalformed) {
				t.Errorf("ParseHeader(%q) = %+v, %v; want ErrMalformed", tt.in, h, err)
			}
		})
	}
}
