// Writes dist/index.mjs: the ES module entry, re-exporting the CommonJS build.
const fs = require("fs");
const path = require("path");
const names = Object.keys(require(path.join(__dirname, "..", "dist", "index.js")));
fs.writeFileSync(
  path.join(__dirname, "..", "dist", "index.mjs"),
  `import cjs from "./index.js";\nexport const { ${names.join(", ")} } = cjs;\nexport default cjs;\n`
);
