// Settings: the "all" buttons of the roles matrix tick a whole row or
// column (or clear it when every box of it was ticked). They come hidden
// and are shown here, once they work: before this script runs (or
// without scripts) a click on them would do nothing.
function toggle(boxes) {
  const on = !boxes.every((box) => box.checked);
  for (const box of boxes) box.checked = on;
}

document.addEventListener("click", (event) => {
  const row = event.target.closest("button.row-all");
  if (row) {
    toggle([...row.closest("tr").querySelectorAll("input[type=checkbox]")]);
    return;
  }
  const column = event.target.closest("button.column-all");
  if (column) {
    const at = Number(column.dataset.column);
    const body = column.closest("table").tBodies[0];
    toggle([...body.rows].map((tr) => tr.cells[at].querySelector("input[type=checkbox]")).filter(Boolean));
  }
});

for (const button of document.querySelectorAll("button.row-all, button.column-all")) button.hidden = false;
