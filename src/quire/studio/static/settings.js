// Settings: "all" toggles a row of the roles matrix (all ticked -> none, else all).
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.row-all");
  if (!button) return;
  const boxes = [...button.closest("tr").querySelectorAll("input[type=checkbox]")];
  const on = !boxes.every((box) => box.checked);
  for (const box of boxes) box.checked = on;
});
