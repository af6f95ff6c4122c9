package e2e

import (
	"io"
	"net/http"
)

// HTTPGet reads a loopback page: its body and status code (0 when there was no answer).
func HTTPGet(url string) (string, int) {
	resp, err := http.Get(url) // #nosec G107 -- loopback test URL
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}
