// The one script of runbot's pages: "Copy as postmortem" (the page works
// without it: the draft is on the page and behind a link), and printing
// opens every collapsed section so that paper shows the raw output too.
(function () {
  var b = document.getElementById("copy-postmortem");
  if (b && navigator.clipboard) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var text = document.getElementById(b.dataset.copy).textContent;
      var status = document.getElementById("copy-status");
      navigator.clipboard.writeText(text).then(function () {
        status.textContent = "Copied.";
      }, function () {
        status.textContent = "Could not copy; select the Markdown below instead.";
      });
    });
  }
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });
})();
