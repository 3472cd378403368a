# Throwaway certificates made with openssl for the TLS suites: a CA and certificates it signs,
# each valid for localhost and 127.0.0.1 besides its own name.
import os
import subprocess


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_ca(directory, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=%s" % name, "-keyout", name + ".key", "-out", name + ".pem", cwd=directory)


def make_cert(directory, ca, name, cn):
    """A certificate for `cn` (also valid for localhost and 127.0.0.1) signed by `ca`."""
    with open(os.path.join(directory, name + ".ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,DNS:%s,IP:127.0.0.1\n" % cn)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=%s" % cn, "-keyout",
            name + ".key", "-out", name + ".csr", cwd=directory)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".pem",
            cwd=directory)
