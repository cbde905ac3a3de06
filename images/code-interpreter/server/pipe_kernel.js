'use strict';
/*
 * The JavaScript and TypeScript kernel: one Node.js process per context, driven by the server over pipes
 * (kernels.py, PipeKernel). Requests arrive one JSON a line on fd $HUTCH_KERNEL_REQ_FD ({id, code, env});
 * events leave one JSON a line on fd $HUTCH_KERNEL_EV_FD (ready, result, error, done); the cell's own output
 * is this process's stdout and stderr.
 *
 * A cell runs like a notebook cell: its top-level declarations (const, let, var, function, class, import) stay
 * defined for later cells, it may use top-level await and `import ... from`, and the value of its last
 * expression is its result. To get that, the cell is parsed (with the TypeScript compiler's parser, which also
 * strips TypeScript's types) and rewritten: declarations become assignments to globals, imports become awaited
 * dynamic imports, and the whole runs in an async function that returns the last expression.
 */
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const util = require('util');
const vm = require('vm');
const Module = require('module');
const { pathToFileURL } = require('url');

const language = process.argv[2] === 'typescript' ? 'typescript' : 'javascript';
const reqFd = Number(process.env.HUTCH_KERNEL_REQ_FD);
const evFd = Number(process.env.HUTCH_KERNEL_EV_FD);
delete process.env.HUTCH_KERNEL_REQ_FD;
delete process.env.HUTCH_KERNEL_EV_FD;
delete process.env.HUTCH_KERNEL_DIR;

/* Debian's node finds its packages in /usr/share/nodejs; another node may not look there */
function loadTypescript() {
	for (const where of ['typescript', '/usr/share/nodejs/typescript', '/usr/lib/nodejs/typescript']) {
		try {
			return require(where);
		} catch (e) {
			if (e.code !== 'MODULE_NOT_FOUND') throw e;
		}
	}
	throw new Error('the typescript package is missing');
}
const ts = loadTypescript();

function send(ev) {
	fs.writeSync(evFd, JSON.stringify(ev) + '\n');
}

/* imports resolve from the working directory, like a script there would */
function hutchImport(spec) {
	if (Module.isBuiltin ? Module.isBuiltin(spec) : Module.builtinModules.includes(spec.replace(/^node:/, '')))
		return import(spec);
	let resolved;
	try {
		resolved = Module.createRequire(path.join(process.cwd(), 'cell.js')).resolve(spec);
	} catch (e) {
		return import(spec);
	}
	return import(pathToFileURL(resolved).href);
}
Object.defineProperty(globalThis, '__hutch', { value: { import: hutchImport }, enumerable: false });
globalThis.require = Module.createRequire(path.join(process.cwd(), 'cell.js'));

function stripTypes(code) {
	return ts.transpileModule(code, {
		compilerOptions: {
			target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, isolatedModules: true,
			preserveValueImports: true, removeComments: false,
		},
		reportDiagnostics: false,
	}).outputText;
}

const hasModifier = (node, kind) => ((ts.getModifiers ? ts.getModifiers(node) : node.modifiers) || [])
	.some((m) => m.kind === kind);

/* the text of node without a leading `export` / `export default` */
function withoutExport(src, node) {
	let text = src.slice(node.getStart(), node.end);
	return text.replace(/^export\s+(default\s+)?/, '');
}

let tmpId = 0;

function rewriteImport(src, node) {
	const from = src.slice(node.moduleSpecifier.getStart(), node.moduleSpecifier.end);
	const load = `await __hutch.import(${from})`;
	const clause = node.importClause;
	if (!clause) return `${load};`;
	const m = `__hutch_m${++tmpId}`;
	const parts = [`const ${m} = ${load};`];
	if (clause.name) parts.push(`globalThis.${clause.name.text} = ${m}.default;`);
	const nb = clause.namedBindings;
	if (nb && ts.isNamespaceImport(nb)) parts.push(`globalThis.${nb.name.text} = ${m};`);
	if (nb && ts.isNamedImports(nb))
		for (const el of nb.elements)
			parts.push(`globalThis.${el.name.text} = ${m}[${JSON.stringify((el.propertyName || el.name).text)}];`);
	return `{ ${parts.join(' ')} }`;
}

function rewriteVariables(src, node) {
	const out = [];
	const isVar = !(node.declarationList.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const));
	for (const d of node.declarationList.declarations) {
		const name = src.slice(d.name.getStart(), d.name.end);
		const init = d.initializer ? src.slice(d.initializer.getStart(), d.initializer.end) : null;
		if (ts.isIdentifier(d.name)) {
			if (init !== null) out.push(`globalThis.${name} = (${init});`);
			else if (isVar) out.push(`if (!(${JSON.stringify(name)} in globalThis)) globalThis.${name} = undefined;`);
			else out.push(`globalThis.${name} = undefined;`);
		} else if (init !== null) {
			out.push(`;(${name} = (${init}));`); // a destructuring pattern assigns to globals in sloppy code
		}
	}
	return out.join(' ');
}

function applyEdits(src, edits) {
	edits.sort((a, b) => b[0] - a[0]); // from the end, so that earlier offsets stay valid
	for (const [start, end, text] of edits) src = src.slice(0, start) + text + src.slice(end);
	return src;
}

const parse = (src) => ts.createSourceFile('cell.js', src, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);

/* import(...) in the cell's code: a vm script has no module loader of its own */
function rewriteDynamicImports(src) {
	const edits = [];
	(function visit(node) {
		if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
			edits.push([node.expression.getStart(), node.expression.end, '__hutch.import']);
		ts.forEachChild(node, visit);
	})(parse(src));
	return applyEdits(src, edits);
}

/* The cell as the body of an async function (see the file's comment). */
function rewrite(code) {
	const src = rewriteDynamicImports(language === 'typescript' ? stripTypes(code) : code);
	const sf = parse(src);
	const edits = [];
	const hoisted = [];
	const stmts = [];
	for (const s of sf.statements) {
		if (ts.isExportDeclaration(s) && !s.moduleSpecifier) edits.push([s.getStart(), s.end, '']);
		else stmts.push(s);
	}
	const last = stmts[stmts.length - 1];
	for (const s of stmts) {
		if (s === last && ts.isExpressionStatement(s))
			edits.push([s.getStart(), s.end, `return (${src.slice(s.expression.getStart(), s.expression.end)});`]);
		else if (ts.isImportDeclaration(s)) edits.push([s.getStart(), s.end, rewriteImport(src, s)]);
		else if (ts.isVariableStatement(s)) edits.push([s.getStart(), s.end, rewriteVariables(src, s)]);
		else if (ts.isFunctionDeclaration(s) && s.name) {
			hoisted.push(s.name.text);
			if (hasModifier(s, ts.SyntaxKind.ExportKeyword)) edits.push([s.getStart(), s.end, withoutExport(src, s)]);
		} else if (ts.isClassDeclaration(s) && s.name)
			edits.push([s.getStart(), s.end, `globalThis.${s.name.text} = ${withoutExport(src, s)};`]);
		else if (ts.isExportAssignment(s))
			edits.push([s.getStart(), s.end, `${src.slice(s.expression.getStart(), s.expression.end)};`]);
	}
	const prelude = hoisted.map((n) => `globalThis.${n} = ${n};`).join(' ');
	return `(async () => { ${prelude}\n${applyEdits(src, edits)}\n})()`;
}

function display(value) {
	if (value === undefined) return null;
	const custom = value !== null && typeof value === 'object' && value[Symbol.for('Jupyter.display')];
	if (typeof custom === 'function') return custom.call(value);
	if (typeof value === 'string') return { 'text/plain': value };
	return { 'text/plain': util.inspect(value, { depth: 4, colors: false }) };
}

function errorEvent(id, e) {
	const isErr = e instanceof Error || (e && typeof e === 'object' && 'message' in e);
	return {
		id, type: 'error', name: isErr ? String(e.name || 'Error') : 'Error',
		value: isErr ? String(e.message) : util.inspect(e), traceback: isErr && e.stack ? String(e.stack) : String(e),
	};
}

let count = 0;
let interrupt = null; // rejects the running cell's wait when SIGINT comes while it awaits

process.on('SIGINT', () => {
	if (interrupt) interrupt(Object.assign(new Error('the execution was interrupted'), { name: 'InterruptedError' }));
});
/* a rejection or throw nobody handles (a timer of an earlier cell, say) is reported, not fatal */
process.on('unhandledRejection', (e) => process.stderr.write(`Unhandled rejection: ${util.inspect(e)}\n`));
process.on('uncaughtException', (e) => process.stderr.write(`Uncaught exception: ${e && e.stack ? e.stack : e}\n`));

function setEnv(env) {
	const saved = {};
	for (const [k, v] of Object.entries(env || {})) {
		saved[k] = Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined;
		process.env[k] = String(v);
	}
	return () => {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	};
}

async function run(req) {
	const restore = setEnv(req.env);
	count++;
	try {
		const script = rewrite(req.code);
		const promise = vm.runInThisContext(script, { filename: 'cell', breakOnSigint: true });
		const value = await new Promise((resolve, reject) => {
			interrupt = reject;
			promise.then(resolve, reject);
		});
		const data = display(value);
		if (data) send({ id: req.id, type: 'result', data });
	} catch (e) {
		send(errorEvent(req.id, e));
	} finally {
		interrupt = null;
		restore();
		send({ id: req.id, type: 'done', count });
	}
}

/* one cell at a time, in order */
let queue = Promise.resolve();
const rl = readline.createInterface({ input: fs.createReadStream(null, { fd: reqFd }) });
rl.on('line', (line) => {
	if (!line.trim()) return;
	const req = JSON.parse(line);
	queue = queue.then(() => run(req));
});
rl.on('close', () => process.exit(0));
send({ type: 'ready' });
