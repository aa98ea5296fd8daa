// Navigation the book adds to mdBook's pages: a table of the page's sections under its
// title, previous/next links that carry the chapters' names, and click-to-enlarge figures.
(function () {
    var main = document.querySelector("#content main");
    if (!main) {
        return;
    }
    // The page's sections (its h2 headings), when it has enough of them to need a table.
    var title = main.querySelector("h1");
    var sections = Array.prototype.slice.call(main.querySelectorAll("h2[id]"));
    if (title && sections.length >= 3) {
        var toc = document.createElement("details");
        toc.className = "arl-toc";
        // open on a wide screen; on a phone it would fill the first screen, so it starts closed
        toc.open = window.innerWidth > 600;
        var summary = document.createElement("summary");
        summary.textContent = "In this chapter";
        toc.appendChild(summary);
        var list = document.createElement("ol");
        sections.forEach(function (h) {
            var item = document.createElement("li");
            var link = document.createElement("a");
            link.href = "#" + h.id;
            link.textContent = h.textContent;
            item.appendChild(link);
            list.appendChild(item);
        });
        toc.appendChild(list);
        title.insertAdjacentElement("afterend", toc);
    }
    // Previous / next, named from the sidebar's links (toc.js has filled it by now).
    var names = {};
    document.querySelectorAll("mdbook-sidebar-scrollbox a[href], #sidebar a[href]").forEach(function (a) {
        names[a.getAttribute("href").replace(/^(\.\.\/)+/, "").split("#")[0]] = a.textContent.trim();
    });
    var pager = document.createElement("nav");
    pager.className = "arl-pager";
    pager.setAttribute("aria-label", "Previous and next chapter");
    [["prev", "arl-prev", "\u2190 "], ["next", "arl-next", ""]].forEach(function (kind) {
        var arrow = document.querySelector("a.nav-chapters[rel~=" + kind[0] + "]");
        if (!arrow) {
            return;
        }
        var href = arrow.getAttribute("href");
        var name = names[href.replace(/^(\.\.\/)+/, "").split("#")[0]] || arrow.title;
        var link = document.createElement("a");
        link.className = kind[1];
        link.href = href;
        link.rel = kind[0];
        link.textContent = kind[0] === "prev" ? kind[2] + name : name + " \u2192";
        pager.appendChild(link);
    });
    if (pager.children.length) {
        main.appendChild(pager);
    }
    // Figures open at full size in a new tab (their SVG text is sized for the column).
    main.querySelectorAll('img[src*="figures/"]').forEach(function (img) {
        if (img.parentElement.tagName === "A") {
            return;
        }
        var link = document.createElement("a");
        link.href = img.getAttribute("src");
        link.target = "_blank";
        link.title = "Open the figure at full size";
        img.parentElement.insertBefore(link, img);
        link.appendChild(img);
    });
})();
