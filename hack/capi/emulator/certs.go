package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// authority is a certificate authority read from a Cluster API Secret (`<cluster>-ca`,
// `<cluster>-etcd`): keys tls.crt and tls.key. Only the parsed values are kept; the fingerprint
// tells a rotated Secret apart without keeping its bytes.
type authority struct {
	cert        *x509.Certificate
	key         crypto.Signer
	fingerprint [sha256.Size]byte
}

// parseAuthority reads a CA Secret. Error messages name the Secret and the key, never content.
func parseAuthority(s *corev1.Secret) (*authority, error) {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil, fmt.Errorf("secret %s/%s lacks %s or %s", s.Namespace, s.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	block, _ := pem.Decode(crt)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("secret %s/%s: %s is not a PEM certificate", s.Namespace, s.Name, corev1.TLSCertKey)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, corev1.TLSCertKey, err)
	}
	signer, err := parsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %s: %w", s.Namespace, s.Name, corev1.TLSPrivateKeyKey, err)
	}
	h := sha256.New()
	h.Write(crt)
	h.Write(key)
	a := &authority{cert: cert, key: signer}
	copy(a.fingerprint[:], h.Sum(nil))
	return a, nil
}

func parsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("unsupported PKCS#8 key type")
	}
	return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
}

// leafKey is shared by every serving certificate this process issues: generating a key per
// certificate would only cost time, and nothing outside this process ever sees it.
var leafKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// issue signs a serving certificate for the given names with the authority.
func (a *authority) issue(commonName string, dnsNames []string, ips []net.IP, usages ...x509.ExtKeyUsage) (*tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(365 * 24 * time.Hour)
	if a.cert.NotAfter.Before(notAfter) {
		notAfter = a.cert.NotAfter
	}
	keyUsage := x509.KeyUsageDigitalSignature
	if _, ok := a.key.(*rsa.PrivateKey); ok {
		// Irrelevant for an ECDSA leaf, but some verifiers look for it on RSA-signed chains.
		keyUsage |= x509.KeyUsageKeyEncipherment
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           usages,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, leafKey.Public(), a.key)
	if err != nil {
		return nil, fmt.Errorf("signing the %s certificate: %w", commonName, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: leafKey, Leaf: leaf}, nil
}

// apiServerCertificate is what kubeadm issues for kube-apiserver (CN kube-apiserver, which KCP's
// certificate expiry check looks for), for the endpoint's address and the loopback names.
func (a *authority) apiServerCertificate(host net.IP) (*tls.Certificate, error) {
	return a.issue("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		uniqueIPs(host, net.IPv4(127, 0, 0, 1), net.IPv6loopback),
		x509.ExtKeyUsageServerAuth)
}

// etcdServingCertificate is an etcd member's server certificate: CN and DNS name are the etcd pod
// name, which KCP's etcd client uses as the TLS server name.
func (a *authority) etcdServingCertificate(podName string, host net.IP) (*tls.Certificate, error) {
	return a.issue(podName, []string{podName, "localhost"},
		uniqueIPs(host, net.IPv4(127, 0, 0, 1), net.IPv6loopback),
		x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

func uniqueIPs(ips ...net.IP) []net.IP {
	out := make([]net.IP, 0, len(ips))
	for _, ip := range ips {
		dup := false
		for _, o := range out {
			if o.Equal(ip) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, ip)
		}
	}
	return out
}
