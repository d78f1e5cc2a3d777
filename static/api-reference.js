// Renders the API reference page (views.APIReferencePage) with Swagger UI
// from the description the page names. No "try it out": the reference
// describes; requests need a key, which this page never holds.
document.addEventListener("DOMContentLoaded", function () {
  var el = document.getElementById("api-reference");
  if (!el || typeof SwaggerUIBundle !== "function") {
    return;
  }
  SwaggerUIBundle({
    url: el.dataset.specUrl,
    domNode: el,
    deepLinking: true,
    supportedSubmitMethods: [],
    defaultModelsExpandDepth: 0,
    // No badge from validator.swagger.io: nothing leaves the platform.
    validatorUrl: null,
  });
});
