// Progressive enhancement only: the page works without this file. A "Copy"
// button appears next to each copyable command.
for (const button of document.querySelectorAll("button[data-copy]")) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(button.dataset.copy);
      button.textContent = "Copied";
    } catch {
      // No clipboard permission (an insecure origin, a locked-down browser):
      // select the text so the keyboard shortcut copies it.
      const code = document.getElementById(button.getAttribute("aria-controls"));
      if (code) window.getSelection().selectAllChildren(code);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  });
}
