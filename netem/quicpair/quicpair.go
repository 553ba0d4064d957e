// Package quicpair opens real quic-go connections over the lab's networks:
// between two endpoints of the in-memory network inside a synctest bubble,
// or over loopback UDP through the real-time proxy. It owns the lab's TLS
// material: a self-signed Ed25519 certificate valid from 1990 to 2100,
// because a synctest bubble's clock starts at 2000-01-01 and a certificate
// made "now" would not be valid yet. Ed25519 signatures have a fixed length,
// so handshake packets have the same sizes in every run.
package quicpair

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/quic-go/quic-go"
)

// ALPN is the application protocol the lab's agent and viewer negotiate.
const ALPN = "latencylab"

// ServerName is the name in the certificate and the one clients verify.
const ServerName = "latencylab.test"

var (
	certOnce sync.Once
	cert     tls.Certificate
	roots    *x509.CertPool
	certErr  error
)

// certificateKeySeed fixes the certificate's key. The lab's certificate
// guards nothing, and a key drawn from crypto/rand would consume draws from
// whichever session made it first: with crypto/rand seeded per session
// (testing/cryptotest), that first session would differ from every later
// one with the same seed.
var certificateKeySeed = sha256.Sum256([]byte("latencylab test certificate"))

// makeCertificate creates the self-signed certificate once per process.
func makeCertificate() {
	priv := ed25519.NewKeyFromSeed(certificateKeySeed[:])
	pub := priv.Public()
	var err error
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: ServerName},
		DNSNames:              []string{ServerName},
		NotBefore:             time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		certErr = err
		return
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		certErr = err
		return
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv, Leaf: leaf}
	roots = x509.NewCertPool()
	roots.AddCert(leaf)
}

// TLS returns a server and a client configuration that trust each other,
// for ALPN and ServerName. keyLog, if not nil, receives the TLS secrets in
// NSS key log format (for Wireshark).
func TLS(keyLog ...interface{ Write([]byte) (int, error) }) (server, client *tls.Config, err error) {
	certOnce.Do(makeCertificate)
	if certErr != nil {
		return nil, nil, fmt.Errorf("quicpair: certificate: %w", certErr)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}}
	client = &tls.Config{RootCAs: roots, ServerName: ServerName, NextProtos: []string{ALPN}}
	if len(keyLog) > 0 && keyLog[0] != nil {
		server.KeyLogWriter = keyLog[0]
		client.KeyLogWriter = keyLog[0]
	}
	return server, client, nil
}

// Pair is an open QUIC connection seen from both ends.
type Pair struct {
	// Client is the dialling end, Server the accepting one.
	Client, Server *quic.Conn

	clientTr, serverTr *quic.Transport
	listener           *quic.Listener
}

// Open runs a QUIC handshake between a server on serverConn and a client on
// clientConn. The client dials dial (nil means serverConn's own address; pass
// a proxy's address to go through it). conf may be nil for quic-go's
// defaults. The PacketConns stay the caller's: Close does not close them.
func Open(ctx context.Context, serverConn, clientConn net.PacketConn, dial net.Addr, conf *quic.Config) (*Pair, error) {
	return OpenKeyLog(ctx, serverConn, clientConn, dial, conf, nil)
}

// OpenKeyLog is Open with both ends writing their TLS secrets to keyLog in
// NSS key log format, so that Wireshark can decrypt a capture of the
// connection. A nil keyLog writes nothing.
func OpenKeyLog(ctx context.Context, serverConn, clientConn net.PacketConn, dial net.Addr, conf *quic.Config, keyLog io.Writer) (*Pair, error) {
	serverTLS, clientTLS, err := TLS(keyLog)
	if err != nil {
		return nil, err
	}
	if dial == nil {
		dial = serverConn.LocalAddr()
	}
	p := &Pair{
		serverTr: &quic.Transport{Conn: serverConn},
		clientTr: &quic.Transport{Conn: clientConn},
	}
	p.listener, err = p.serverTr.Listen(serverTLS, conf)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("quicpair: listen: %w", err)
	}
	type accepted struct {
		c   *quic.Conn
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := p.listener.Accept(ctx)
		acc <- accepted{c, err}
	}()
	p.Client, err = p.clientTr.Dial(ctx, dial, clientTLS, conf)
	if err != nil {
		p.Close() // ends the Accept too
		<-acc
		if mtuErr := checkPathMTU(serverConn, clientConn, conf); mtuErr != nil {
			return nil, fmt.Errorf("quicpair: dial %v: %w (%w)", dial, mtuErr, err)
		}
		return nil, fmt.Errorf("quicpair: dial %v: %w", dial, err)
	}
	a := <-acc
	if a.err != nil {
		p.Close()
		return nil, fmt.Errorf("quicpair: accept: %w", a.err)
	}
	p.Server = a.c
	return p, nil
}

// ErrPathMTU is why a handshake over an in-memory path whose MTU is too
// small for QUIC's first packets fails: quic-go sends them with DF, so the
// link drops every one (netem.DropMTU) and the handshake times out.
var ErrPathMTU = errors.New("path MTU too small for QUIC")

// checkPathMTU explains a failed handshake between two endpoints of an
// in-memory network: it returns an error wrapping ErrPathMTU, naming the
// path and the sizes, when a direction's MTU cannot carry quic-go's
// initial packets with their IP and UDP headers. Other conns, or a path
// wide enough, give nil.
func checkPathMTU(serverConn, clientConn net.PacketConn, conf *quic.Config) error {
	server, ok1 := serverConn.(*netem.PacketConn)
	client, ok2 := clientConn.(*netem.PacketConn)
	if !ok1 || !ok2 {
		return nil
	}
	size := 1280 // quic-go's default InitialPacketSize
	if conf != nil && conf.InitialPacketSize > 0 {
		size = int(conf.InitialPacketSize)
	}
	for _, dir := range [][2]*netem.PacketConn{{client, server}, {server, client}} {
		from, to := dir[0].LocalAddr().(*net.UDPAddr), dir[1].LocalAddr().(*net.UDPAddr)
		header := netem.HeaderBytes(&netem.Packet{To: to})
		if mtu := dir[0].PathMTU(to.AddrPort().Addr()); mtu < size+header {
			return fmt.Errorf("%w: the path %v -> %v has an MTU of %d bytes, and QUIC's %d-byte initial packets need %d with their IP and UDP headers",
				ErrPathMTU, from, to, mtu, size, size+header)
		}
	}
	return nil
}

// Close closes both connections and both transports, and waits until
// quic-go's goroutines for them have ended.
func (p *Pair) Close() error {
	var errs []error
	for _, c := range []*quic.Conn{p.Client, p.Server} {
		if c != nil {
			c.CloseWithError(0, "done")
		}
	}
	if p.listener != nil {
		errs = append(errs, p.listener.Close())
	}
	for _, tr := range []*quic.Transport{p.clientTr, p.serverTr} {
		if tr != nil {
			errs = append(errs, tr.Close())
		}
	}
	return errors.Join(errs...)
}
