// Draw the book's ```mermaid diagrams (<pre class="mermaid">, written by mdbook-agentrl)
// with the mermaid script bundled next to this file: nothing is fetched from the network.
(function () {
    if (typeof mermaid === "undefined" || !document.querySelector("pre.mermaid")) {
        return;
    }
    var classes = document.documentElement.classList;
    var dark = classes.contains("coal") || classes.contains("navy") || classes.contains("ayu");
    mermaid.initialize({
        startOnLoad: false,
        securityLevel: "strict",
        theme: dark ? "dark" : "default",
        // Drawn at natural size; the stylesheet fits it to the column, and a click toggles
        // natural size (scrolling sideways) for a wide graph.
        flowchart: { useMaxWidth: false, nodeSpacing: 24, rankSpacing: 28 },
    });
    mermaid.run({ querySelector: "pre.mermaid" }).then(function () {
        document.querySelectorAll("pre.mermaid").forEach(function (pre) {
            var svg = pre.querySelector("svg");
            if (svg && svg.getBoundingClientRect().width < svg.width.baseVal.value - 1) {
                pre.classList.add("arl-zoomable");
                pre.title = "Click to enlarge";
                pre.addEventListener("click", function () {
                    pre.classList.toggle("arl-zoomed");
                    pre.title = pre.classList.contains("arl-zoomed") ? "Click to fit" : "Click to enlarge";
                });
            }
        });
    });
    // mdBook switches themes without a reload; redraw with the matching palette.
    document.querySelectorAll("#theme-list button, #mdbook-theme-list button").forEach(function (b) {
        b.addEventListener("click", function () { window.location.reload(); });
    });
})();
