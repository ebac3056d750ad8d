// svc-code service worker (generated into dist/sw.js by the build, which fills
// in the version and the asset list). It caches the app shell only: the page,
// its hashed assets, the login page's stylesheet, the manifest and the icons.
// API answers and sockets are never cached: they always come from the server.
// Each build has its own cache, so an update never mixes old and new code.
const VERSION = "3343fec7203a";
const CACHE = "svc-code-shell-" + VERSION;
const ASSETS = ["/assets/DiffView-VSxLtlKX.js","/assets/Palette-C7yEyWa5.js","/assets/Palette-IAVhAxrd.css","/assets/apl-gfMMiTNf.js","/assets/asciiarmor-C_eisQCp.js","/assets/asn1-DCl_8MCW.js","/assets/asterisk-BEn0Cwpx.js","/assets/brainfuck-D5EjA2JK.js","/assets/c-DaO8xguW.js","/assets/changes-BCI0a8ly.css","/assets/changes-D9xGaT5z.js","/assets/clike-xvONpD0Z.js","/assets/clojure-BflJGmDX.js","/assets/cmake-84nbDH0I.js","/assets/cobol-DHLQUbN7.js","/assets/coffeescript-De_zI4J0.js","/assets/commonlisp-DgAKBe0r.js","/assets/costs-CLFRZTDg.js","/assets/costs-D1GFMQRW.css","/assets/crystal-Bl6YKCG_.js","/assets/css-C8fQr_0Q.js","/assets/css-CnaYoQib.js","/assets/cypher-p9eYesGn.js","/assets/d-DWkQyNnU.js","/assets/diff-ChtP43wD.js","/assets/diff-woXpYk--.js","/assets/dist-4J9YaUms.js","/assets/dist-B2BJnxuo.js","/assets/dist-B71-d4H1.js","/assets/dist-BAJWYwJZ.js","/assets/dist-BN7DICDM.js","/assets/dist-BX35Bja8.js","/assets/dist-BbJ53AwZ.js","/assets/dist-Bff-r6KQ.js","/assets/dist-BnJcG9kI.js","/assets/dist-Bv3CpR4o.js","/assets/dist-C30F4iNc.js","/assets/dist-CLxceDvp.js","/assets/dist-CcrTyezc.js","/assets/dist-CfxjL_Pz.js","/assets/dist-CkP8xK9e.js","/assets/dist-CpaJlFpE.js","/assets/dist-D7tp_1kK.js","/assets/dist-DD8d_vTJ.js","/assets/dist-DG0rOm68.js","/assets/dist-DOezEsJq.js","/assets/dist-DXiXK88H.js","/assets/dist-Dy15fARp.js","/assets/dist-IyjLPOz8.js","/assets/dist-WziuLlLs.js","/assets/dist-ikQLriKv.js","/assets/dist-v-TxWFie.js","/assets/dockerfile-DJkHQgkl.js","/assets/dockerfile-IyjqRm3v.js","/assets/dtd-DTF72YNO.js","/assets/dylan-S7ucR4pR.js","/assets/ebnf-D4c0_ac3.js","/assets/ecl-BVIeWmwY.js","/assets/editor-DEWgSm3B.js","/assets/eiffel-BEjRio4Q.js","/assets/elm-Cshzl8qu.js","/assets/erlang-BV0c4Hdn.js","/assets/factor-LKH5gN8L.js","/assets/fcl-ClOhbFR7.js","/assets/files-D0lo_8aA.js","/assets/files-DuliXETx.css","/assets/forth-D6RzAl64.js","/assets/fortran-Bt6PBEDR.js","/assets/gas-BHEdbvp9.js","/assets/gherkin-oBAE_ms0.js","/assets/git-BWcbRPMV.css","/assets/git-Bm6DZxmz.js","/assets/github-dark-C-LZuMrd.js","/assets/github-light-EUqPIrTm.js","/assets/go-rLFTqkRN.js","/assets/groovy-CUrWKPia.js","/assets/haskell-BRsoo5mP.js","/assets/haxe-DjVOVvNP.js","/assets/html-wSbaAAK3.js","/assets/http-CLVgA2GD.js","/assets/idl-BUZw3wgd.js","/assets/index-BR3g4vdt.css","/assets/index-BeGyJslj.js","/assets/java-BXcb2rRD.js","/assets/javascript-BgS3c2Ky.js","/assets/javascript-lS2r2ifg.js","/assets/json-qhed-kSA.js","/assets/jsx-Bz0zcwM4.js","/assets/jsxRuntime.module-DpoKxTxH.js","/assets/julia-CQfgDRfP.js","/assets/libesm-D4q3ztzg.js","/assets/livescript-BXxG0Yva.js","/assets/lua-DPCEkfD_.js","/assets/makefile-Dixweg8N.js","/assets/markdown-BYOwaDjH.js","/assets/mathematica-u8YMmbU0.js","/assets/mbox-BEMVcqjs.js","/assets/mirc-C9zpzAZU.js","/assets/mllike-B45xgp2S.js","/assets/modelica-CqHI_q-D.js","/assets/mscgen-qgSLujhx.js","/assets/mumps-BSzj6Xyz.js","/assets/nginx-C-ORUuei.js","/assets/nsis-viPvXFiq.js","/assets/ntriples-CzMBulkp.js","/assets/octave-D2Q8cUp1.js","/assets/oz-BwTct_5T.js","/assets/pascal-Dp_KdFgX.js","/assets/perl-BkSkiI9m.js","/assets/pig-AF4Hwhju.js","/assets/powershell-D8WpQPaX.js","/assets/properties-C357ku5U.js","/assets/protobuf-D1ij_kNL.js","/assets/pug-BqCHZ5xT.js","/assets/puppet-BZyAS7I4.js","/assets/python-B_1Jd8HM.js","/assets/python-gzcpVVnB.js","/assets/q-B9NhS7L_.js","/assets/r-CxDmU1I4.js","/assets/rolldown-runtime-DK3Fl9T5.js","/assets/rpm-gpDK5sbt.js","/assets/ruby-ChfNwlCY.js","/assets/rust-DpiIf5JO.js","/assets/sas-C2OyD2Y6.js","/assets/scheme-D9qYN0V5.js","/assets/settings-Bax55AiI.css","/assets/settings-uItdEA0P.js","/assets/shell-DwuoZtxw.js","/assets/shellscript-CLZ0U2zV.js","/assets/sieve-tLWDfEkZ.js","/assets/simple-mode-DXiLM1-G.js","/assets/smalltalk-BLp5-jwC.js","/assets/solr-B78wSQJQ.js","/assets/sparql-Dz-mlCAC.js","/assets/spreadsheet-CTIncYxj.js","/assets/sql-BeowhzS1.css","/assets/sql-CEbI0hMM.js","/assets/sql-DoOd4YIo.js","/assets/sql-DuQMFDvy.js","/assets/stex-DNzd62Q_.js","/assets/stylus-BOVgKnng.js","/assets/swift-DKB6_1j6.js","/assets/tcl-BGfruO1u.js","/assets/terminal-CdoV9Je1.js","/assets/textile-C4jVoHG1.js","/assets/tiddlywiki-VlUiK86J.js","/assets/tiki-CvUEFusT.js","/assets/toml-BPTmHmyx.js","/assets/toml-CcmNWLt0.js","/assets/troff-C2dAgh7P.js","/assets/tsx-udAQXfEw.js","/assets/ttcn-PPSTk1ow.js","/assets/ttcn-cfg-2b4Gb5sE.js","/assets/turtle-Cx3rYX2g.js","/assets/typescript-bsJCZSQ-.js","/assets/uPlot-CnsZ1jie.css","/assets/uPlot.esm-BScb58at.js","/assets/uPlot.min-CVmP87Pz.js","/assets/uchart-nsEwmuG2.js","/assets/vb-BthdM_4N.js","/assets/vbscript-D9f6rSsU.js","/assets/velocity-CqftRsjg.js","/assets/verilog-CjI9Y6RI.js","/assets/vhdl-kS471soi.js","/assets/webidl-D5jiJvOU.js","/assets/xquery-BKJx4mf9.js","/assets/yacas-CXXgtw0p.js","/assets/yaml-rwi0_p6S.js","/assets/z80-Co3PbHdE.js"];
const SHELL = ["/", "/static/css/login.css", "/manifest.json", "/instance-icons/default.svg", "/instance-icons/icon-192.png", "/instance-icons/icon-512.png"];

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      // The page itself is behind the login: cache what can be fetched now.
      .then((c) => Promise.all([...ASSETS, ...SHELL].map((u) => c.add(u).catch(() => undefined))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("svc-code-shell-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

function isShellPage(url) {
  return url.pathname === "/" || url.pathname === "/new" || /^\/s\/[A-Z2-7]+\/?$/.test(url.pathname);
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.startsWith("/api/") || url.pathname === "/chat" || url.pathname === "/login") return;
  if (ASSETS.includes(url.pathname)) {
    // Hashed names never change: cache first.
    event.respondWith(caches.match(req).then((hit) => hit || fetch(req)));
    return;
  }
  if (req.mode === "navigate" && isShellPage(url)) {
    // The page: the network first (it may redirect to /login), the cached
    // shell when offline.
    event.respondWith(
      fetch(req)
        .then((resp) => {
          if (resp.ok && !resp.redirected) {
            const copy = resp.clone();
            caches.open(CACHE).then((c) => c.put("/", copy));
          }
          return resp;
        })
        .catch(() => caches.match("/")),
    );
    return;
  }
  if (SHELL.includes(url.pathname)) {
    event.respondWith(
      fetch(req)
        .then((resp) => {
          if (resp.ok) {
            const copy = resp.clone();
            caches.open(CACHE).then((c) => c.put(req, copy));
          }
          return resp;
        })
        .catch(() => caches.match(req)),
    );
  }
});
