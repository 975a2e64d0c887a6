// Throwaway certificates for local secured brokers (tests and local runs): a CA, a server
// certificate for 127.0.0.1 and localhost, a client certificate, and the server's PKCS#12
// keystore for Kafka. Made with openssl, which Debian and CI images have.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalCertificates {
  dir: string;
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  /** The server key and certificate chain as PKCS#12, for a Java keystore. */
  serverKeystoreFile: string;
  keystorePassword: string;
}

/** Makes the files once per folder; later calls return the same ones. */
export function makeCertificates(dir: string): LocalCertificates {
  mkdirSync(dir, { recursive: true });
  const files: LocalCertificates = {
    dir,
    caFile: join(dir, 'ca.pem'),
    serverCertFile: join(dir, 'server.pem'),
    serverKeyFile: join(dir, 'server-key.pem'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client-key.pem'),
    serverKeystoreFile: join(dir, 'server.p12'),
    keystorePassword: 'hugot-local-keystore',
  };
  if (existsSync(files.serverKeystoreFile)) return files;
  const caKey = join(dir, 'ca-key.pem');
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-sha256',
    '-days',
    '3650',
    '-keyout',
    caKey,
    '-out',
    files.caFile,
    '-subj',
    '/CN=hugot-stream local CA',
  ]);
  signed(dir, 'server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1', caKey, files);
  signed(dir, 'client', '/CN=hugot-client', 'extendedKeyUsage=clientAuth', caKey, files);
  openssl([
    'pkcs12',
    '-export',
    '-in',
    files.serverCertFile,
    '-inkey',
    files.serverKeyFile,
    '-certfile',
    files.caFile,
    '-name',
    'server',
    '-out',
    files.serverKeystoreFile,
    '-passout',
    `pass:${files.keystorePassword}`,
  ]);
  return files;
}

function signed(
  dir: string,
  name: 'server' | 'client',
  subject: string,
  extension: string,
  caKey: string,
  files: LocalCertificates,
): void {
  const key = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `${extension}\n`);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  openssl([
    'x509',
    '-req',
    '-sha256',
    '-days',
    '3650',
    '-in',
    csr,
    '-CA',
    files.caFile,
    '-CAkey',
    caKey,
    '-CAcreateserial',
    '-out',
    join(dir, `${name}.pem`),
    '-extfile',
    ext,
  ]);
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(
      `openssl ${args[0] ?? ''} failed (is openssl installed? Debian: apt-get install openssl): ${stderr.trim()}`,
    );
  }
}
