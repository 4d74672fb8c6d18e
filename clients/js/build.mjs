// The browser bundles: dist/sdckit-device.mjs (ESM) and dist/sdckit-device.js (IIFE, global
// `SdckitDevice`), every dependency inside, no network access at run time.
import { build } from "esbuild";

const common = { entryPoints: ["src/index.ts"], bundle: true, platform: "browser", target: "es2022", sourcemap: true, legalComments: "linked", minify: true };
await build({ ...common, format: "esm", outfile: "dist/sdckit-device.mjs" });
await build({ ...common, format: "iife", globalName: "SdckitDevice", outfile: "dist/sdckit-device.js" });
