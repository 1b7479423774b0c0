package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sign sets req's Authorization header to a signature, by key at now, of
// req's method and URI and of body, which must be exactly the body req
// sends. Sign does not set or read req.Body. It fails only on a key with an
// invalid ID or a short secret, a time before 1970, or when the system
// has no randomness.
func Sign(req *http.Request, body []byte, key Key, now time.Time) error {
	if err := key.validate(); err != nil {
		return fmt.Errorf("signing request: %w", err)
	}
	if now.Unix() < 0 {
		return fmt.Errorf("signing request: time %v is before 1970", now)
	}
	h := Header{KeyID: key.ID, Timestamp: now.Unix()}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return fmt.Errorf("signing request: generating nonce: %w", err)
	}
	copy(h.Signature[:], signature(key.Secret, h, req, body))
	req.Header.Set("Authorization", h.String())
	return nil
}

// signature returns the HMAC of the string described in the package
// documentation.
func signature(secret []byte, h Header, req *http.Request, body []byte) []byte {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	bodySum := sha256.Sum256(body)
	msg := strings.Join([]string{
		Scheme,
		h.KeyID,
		method,
		req.URL.RequestURI(),
		strconv.FormatInt(h.Timestamp, 10),
		hex.EncodeToString(h.Nonce[:]),
		hex.EncodeToString(bodySum[:]),
	}, "\n")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}
