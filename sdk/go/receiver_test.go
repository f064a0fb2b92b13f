package posthorn

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// readmeReceiver is the net/http receiver exactly as README.md shows it.
func readmeReceiver(t *testing.T) string {
	raw, err := os.ReadFile("README.md")
	ok(t, err)
	for _, block := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(block[1], "package main") {
			return block[1]
		}
	}
	t.Fatal("README.md shows no receiver")
	return ""
}

// receiver is the README's receiver, built against this module and run on a loopback
// port chosen before the endpoint is made (its URL names the port), its output
// collected line by line.
type receiver struct {
	port  int
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
}

var (
	buildOnce sync.Once
	buildDir  string
	built     string
	buildErr  error
)

// TestMain removes the receiver built for the run, if one was.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildReceiver compiles the README's program once per run (go build, offline: the
// module is replaced by this folder and needs nothing else).
func buildReceiver(t *testing.T) string {
	buildOnce.Do(func() {
		here, _ := os.Getwd()
		dir, err := os.MkdirTemp("", "posthorn-go-receiver")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		gomod := fmt.Sprintf("module receiver\n\ngo 1.19\n\nrequire github.com/posthorn/posthorn-go v0.0.0\n\n"+
			"replace github.com/posthorn/posthorn-go => %s\n", here)
		if err = os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err == nil {
			err = os.WriteFile(filepath.Join(dir, "main.go"), []byte(readmeReceiver(t)), 0o644)
		}
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "receiver")
		cmd := exec.Command("go", "build", "-o", built, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build of the README's receiver: %v\n%s", err, out)
		}
	})
	ok(t, buildErr)
	return built
}

func startReceiver(t *testing.T, port int, secret string) *receiver {
	r := &receiver{port: port}
	r.cmd = exec.Command(buildReceiver(t))
	r.cmd.Env = append(os.Environ(), "POSTHORN_WEBHOOK_SECRET="+secret, fmt.Sprintf("PORT=%d", r.port))
	out, err := r.cmd.StdoutPipe()
	ok(t, err)
	ok(t, r.cmd.Start())
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, strings.TrimSpace(scanner.Text()))
			r.mu.Unlock()
		}
	}()
	waitFor(t, "the receiver to listen", 20*time.Second, func() bool {
		conn, err := net.Dial("tcp", r.url(""))
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return r
}

func (r *receiver) url(path string) string {
	if path == "" {
		return fmt.Sprintf("127.0.0.1:%d", r.port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path)
}

// handled counts the lines saying the receiver handled the event.
func (r *receiver) handled(eventID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, line := range r.lines {
		if strings.HasPrefix(line, "handled ") && strings.HasSuffix(line, " "+eventID) {
			n++
		}
	}
	return n
}
