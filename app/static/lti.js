// The deep-linking answer goes back to the learning platform at once (the button does the
// same without JavaScript).
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("lti-return");
  if (form) form.submit();
});
