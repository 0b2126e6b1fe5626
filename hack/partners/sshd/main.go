// capo-test-sshd stands in for the SSH daemons of a bastion and the machines behind it, so that
// the Ansible bootstrap provider's SSH probe (log in to the bastion's floating IP on port 22, open
// a direct-tcpip channel to <machine IP>:22, complete a second SSH handshake through it, open a
// session) can pass against capo-sim, whose servers do not exist.
//
// It accepts public-key logins only, for the users named by -users and the keys in
// -authorized-keys (OpenSSH authorized_keys format), on the bastion and on every tunnelled
// machine alike. A direct-tcpip channel is accepted only to port 22 of an address listed in
// -targets; the tunnelled connection is served by this same program, in process. Sessions accept
// exec/shell requests and exit 0 without running anything. Every login, tunnel and refusal is
// written to stdout as one line ("login user=root key=SHA256:... via=bastion"), never any key
// material.
//
// Test-only; built by hack/partners.sh, run by crates/controller/tests/ansible_consumers.rs.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

var out sync.Mutex

func logf(format string, args ...interface{}) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf(format+"\n", args...)
}

func main() {
	listen := flag.String("listen", "", "address:port to listen on (a loopback address)")
	keysFile := flag.String("authorized-keys", "", "authorized_keys file")
	users := flag.String("users", "root", "comma-separated users allowed to log in")
	targets := flag.String("targets", "", "comma-separated machine addresses reachable through the bastion")
	flag.Parse()
	if *listen == "" || *keysFile == "" {
		fmt.Fprintln(os.Stderr, "usage: capo-test-sshd -listen ADDR:PORT -authorized-keys FILE [-users root] [-targets IP,IP]")
		os.Exit(2)
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(os.Stderr, "-listen must be a loopback address and port, got %q\n", *listen)
		os.Exit(2)
	}

	authorized, err := loadKeys(*keysFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	allowedUsers := set(*users)
	allowedTargets := set(*targets)

	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config := func(via string) *ssh.ServerConfig {
		c := &ssh.ServerConfig{
			PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
				fp := ssh.FingerprintSHA256(key)
				if !allowedUsers[meta.User()] {
					logf("refused user=%s key=%s via=%s reason=user", meta.User(), fp, via)
					return nil, fmt.Errorf("user %s not allowed", meta.User())
				}
				for _, k := range authorized {
					if bytes.Equal(k.Marshal(), key.Marshal()) {
						logf("login user=%s key=%s via=%s", meta.User(), fp, via)
						return &ssh.Permissions{}, nil
					}
				}
				logf("refused user=%s key=%s via=%s reason=key", meta.User(), fp, via)
				return nil, fmt.Errorf("unknown key")
			},
		}
		c.AddHostKey(signer)
		return c
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logf("listening %s", ln.Addr())
	for {
		conn, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go serve(conn, config, "bastion", allowedTargets)
	}
}

// serve runs one SSH server connection; via names the hop ("bastion" or the tunnelled target).
func serve(conn net.Conn, config func(string) *ssh.ServerConfig, via string, targets map[string]bool) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, config(via))
	if err != nil {
		logf("handshake-failed via=%s err=%q", via, err.Error())
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			go session(nc, via)
		case "direct-tcpip":
			go tunnel(nc, config, via, targets)
		default:
			_ = nc.Reject(ssh.UnknownChannelType, "unsupported")
		}
	}
}

func session(nc ssh.NewChannel, via string) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	logf("session via=%s", via)
	for req := range reqs {
		switch req.Type {
		case "exec", "shell":
			_ = req.Reply(true, nil)
			status := make([]byte, 4)
			binary.BigEndian.PutUint32(status, 0)
			_, _ = ch.SendRequest("exit-status", false, status)
			return
		default:
			if req.WantReply {
				_ = req.Reply(req.Type == "pty-req" || req.Type == "env", nil)
			}
		}
	}
}

func tunnel(nc ssh.NewChannel, config func(string) *ssh.ServerConfig, via string, targets map[string]bool) {
	var payload struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &payload); err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip payload")
		return
	}
	if via != "bastion" || payload.Port != 22 || !targets[payload.Host] {
		logf("refused tunnel to=%s:%d via=%s", payload.Host, payload.Port, via)
		_ = nc.Reject(ssh.ConnectionFailed, "no route to host")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	logf("tunnel to=%s:%d via=%s", payload.Host, payload.Port, via)
	serve(channelConn{ch}, config, payload.Host, targets)
}

// channelConn adapts an SSH channel to net.Conn for the nested server handshake.
type channelConn struct{ ssh.Channel }

type addr string

func (a addr) Network() string { return "ssh-channel" }
func (a addr) String() string  { return string(a) }

func (channelConn) LocalAddr() net.Addr              { return addr("local") }
func (channelConn) RemoteAddr() net.Addr             { return addr("remote") }
func (channelConn) SetDeadline(time.Time) error      { return nil }
func (channelConn) SetReadDeadline(time.Time) error  { return nil }
func (channelConn) SetWriteDeadline(time.Time) error { return nil }

func loadKeys(path string) ([]ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []ssh.PublicKey
	for len(bytes.TrimSpace(data)) > 0 {
		key, _, _, rest, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		keys = append(keys, key)
		data = rest
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no keys", path)
	}
	return keys, nil
}

func set(csv string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(csv, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}
