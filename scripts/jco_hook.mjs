// The `--jco-import` hook of `jco serve` for the edge component (see scripts/jco.sh):
// - preopens the host directory JCO_DATA_DIR as /data (the shim preopens nothing by default);
// - gives the component only the USERSTORE_* variables of the environment;
// - lets Rust's std::fs open files for writing: wasi-libc (wasip2) sets the descriptor flag
//   mutate-directory on every open with write access, which preview2-shim's open-at refuses
//   ("unsupported"); on a non-directory that flag grants nothing, so it is dropped there.
//   Every other flag (create, exclusive, truncate, read, write, the sync flags) is passed
//   unchanged, so the shim still refuses what it does not implement.
// The shim is the one scripts/jco.sh installs (target/jco, or JCO_PREFIX): the same module
// instance as the transpiled component's imports, so these settings are the ones it sees.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const prefix = process.env.JCO_PREFIX ??
  resolve(new URL("../target/jco", import.meta.url).pathname);
const shim = `${prefix}/node_modules/@bytecodealliance/preview2-shim/dist/nodejs`;
const { _setPreopens, types } = await import(pathToFileURL(`${shim}/filesystem.js`));
const { _setEnv } = await import(pathToFileURL(`${shim}/cli.js`));

const data = process.env.JCO_DATA_DIR;
if (!data) {
  throw new Error("JCO_DATA_DIR (the host directory to preopen as /data) is not set");
}
_setPreopens({ "/data": data });
_setEnv(Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name.startsWith("USERSTORE_")),
));

const openAt = types.Descriptor.prototype.openAt;
types.Descriptor.prototype.openAt = function (pathFlags, path, openFlags, descriptorFlags) {
  if (!openFlags.directory && descriptorFlags.mutateDirectory) {
    descriptorFlags = { ...descriptorFlags, mutateDirectory: false };
  }
  return openAt.call(this, pathFlags, path, openFlags, descriptorFlags);
};
